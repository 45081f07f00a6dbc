#!/usr/bin/env bash
# Builds a small copy of this host's system under DEST (a tmpfs the test mounted): bash, ls,
# cat, git (with git-core and its templates), python3 with its standard library, every shared
# library they and python's extension modules load, the loader and its cache, and the /etc files
# @system names. A test marks only its own tmpfs, never /, so the programs an agent runs under
# @system are these copies, run in a chroot: the same binaries and files, under DEST.
#
#   make_system_root.sh DEST
set -euo pipefail
dest=$1

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
