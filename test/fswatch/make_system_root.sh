#!/usr/bin/env bash
# Builds a small copy of this host's system under DEST (a tmpfs the test mounted): bash, ls,
# cat, git (with git-core and its templates), python3 with its standard library, every shared
# library they and python's extension modules load, the loader and its cache, and the /etc files
# @system names. A test marks only its own tmpfs, never /, so the programs an agent runs under
# @system are these copies, run in a chroot: the same binaries and files, under DEST.
#
#
# The programs' loader must be the host's file as the watcher sees it: it resolves PT_INTERP
# from the host's root, never inside the chroot. So every copied ELF file's PT_INTERP is
# rewritten to INTERP, a short absolute path (at most as long as the system's loader path)
# that names the copy's loader both ways: inside the copy a link made here, on the host a link
# the caller makes (INTERP -> DEST/<the system's loader path>) and removes.
#
#   make_system_root.sh DEST INTERP
set -euo pipefail
dest=$1
interp=$2

copy() {  # a file, under its own name, in a folder resolved as the real system resolves it
  local path=$1
  [ -e "$path" ] || return 0
  local dir
  dir=$(realpath "$(dirname "$path")")
  mkdir -p "$dest$dir"
  cp -L --preserve=mode "$path" "$dest$dir/$(basename "$path")"
}

mkdir -p "$dest/usr/bin" "$dest/usr/lib" "$dest/usr/lib64" "$dest/usr/sbin" "$dest/etc" \
  "$dest/dev" "$dest/tmp" "$dest/home"
chmod 1777 "$dest/tmp"
# Merged /usr, as on Debian 12.
for top in bin sbin lib lib64; do
  [ -L "/$top" ] && ln -sfn "usr/$top" "$dest/$top"
done

programs=(/usr/bin/bash /usr/bin/ls /usr/bin/cat /usr/bin/git /usr/bin/python3.11 /usr/bin/env
  /usr/bin/dash /usr/bin/true /usr/bin/curl)
for p in "${programs[@]}"; do copy "$p"; done
ln -sfn python3.11 "$dest/usr/bin/python3"
ln -sfn dash "$dest/usr/bin/sh"
cp -a /usr/lib/git-core "$dest/usr/lib/"
mkdir -p "$dest/usr/share"
cp -a /usr/share/git-core "$dest/usr/share/"
cp -a /usr/lib/python3.11 "$dest/usr/lib/"
rm -rf "$dest/usr/lib/python3.11/test" "$dest/usr/lib/python3.11/site-packages" 2>/dev/null || true
# pip, as Debian installs it: a script naming /usr/bin/python3, and its modules.
copy /usr/bin/pip
if [ -d /usr/lib/python3/dist-packages ]; then
  mkdir -p "$dest/usr/lib/python3"
  cp -a /usr/lib/python3/dist-packages "$dest/usr/lib/python3/"
fi

# Every library the copies load (ldd lists the loader too).
elves=("${programs[@]}" /usr/lib/python3.11/lib-dynload/*.so /usr/lib/git-core/git-remote-http)
for elf in "${elves[@]}"; do
  { ldd "$elf" 2>/dev/null || true; } | { grep -oE '/[^ ]+' || true; } |
    while read -r lib; do copy "$lib"; done
done

for f in /etc/ld.so.cache /etc/nsswitch.conf /etc/passwd /etc/group /etc/hosts /etc/host.conf \
  /etc/localtime /etc/gitconfig /etc/inputrc /etc/bash.bashrc /etc/profile; do
  [ -e "$f" ] && cp -L "$f" "$dest$f"
done
ln -sfn /proc/self/fd "$dest/dev/fd"
mknod -m 0666 "$dest/dev/null" c 1 3
mknod -m 0666 "$dest/dev/zero" c 1 5
mknod -m 0666 "$dest/dev/urandom" c 1 9
mknod -m 0666 "$dest/dev/tty" c 5 0

# PT_INTERP: the system's loader path (the one bash names) becomes INTERP in every copied ELF
# file that names it, padded with NULs in place; nothing else in a file changes.
system_interp=$(python3 - "$dest" "$interp" <<'PY'
import os, struct, sys

dest, new = sys.argv[1], sys.argv[2].encode()

def interp_slot(f):
    """(offset, size) of PT_INTERP in the ELF file f, or None."""
    ident = f.read(16)
    if len(ident) < 16 or ident[:4] != b"\x7fELF":
        return None
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        return None
    end = "<" if ident[5] == 1 else ">"
    if ident[4] == 2:
        f.seek(32); phoff, = struct.unpack(end + "Q", f.read(8))
        f.seek(54); phentsize, phnum = struct.unpack(end + "HH", f.read(4))
        fmt, type_at, off_at, size_at = end + "IIQQQQQQ", 0, 2, 5
    else:
        f.seek(28); phoff, = struct.unpack(end + "I", f.read(4))
        f.seek(42); phentsize, phnum = struct.unpack(end + "HH", f.read(4))
        fmt, type_at, off_at, size_at = end + "IIIIIIII", 0, 1, 4
    if phentsize != struct.calcsize(fmt):
        return None
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        header = struct.unpack(fmt, f.read(phentsize))
        if header[type_at] == 3:  # PT_INTERP
            return header[off_at], header[size_at]
    return None

def read_interp(path):
    with open(path, "rb") as f:
        slot = interp_slot(f)
        if slot is None:
            return None
        f.seek(slot[0])
        return f.read(slot[1])

old = read_interp(os.path.join(dest, "usr/bin/bash"))
if not old or not old.endswith(b"\0"):
    sys.exit("the copied bash names no loader")
if len(new) + 1 > len(old):
    sys.exit(f"{new.decode()} does not fit where {old[:-1].decode()} was")
for top, dirs, files in os.walk(dest):
    for name in files:
        path = os.path.join(top, name)
        if os.path.islink(path) or not os.path.isfile(path):
            continue
        with open(path, "r+b") as f:
            try:
                slot = interp_slot(f)
            except (struct.error, OSError):
                continue
            if slot is None or slot[1] != len(old):
                continue
            f.seek(slot[0])
            if f.read(slot[1]) != old:
                continue
            f.seek(slot[0])
            f.write(new.ljust(len(old), b"\0"))
print(old[:-1].decode())
PY
)
mkdir -p "$dest$(dirname "$interp")"
ln -sfn "$system_interp" "$dest$interp"
