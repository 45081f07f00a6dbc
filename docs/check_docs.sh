#!/usr/bin/env bash
# Checks that every reference in the repository's docs and comments resolves inside it:
#   1. no file points outside the repository (the spec and design notes the project started
#      from live outside it, and a pointer there breaks for every other reader) and no comment
#      carries an issue number;
#   2. every Markdown link and #anchor in every .md file resolves (file, then heading);
#   3. every rule a comment or doc cites ("rule N2", "rules P3 to P6") is a rule of
#      docs/ARCHITECTURE.md;
#   4. every repository path a doc names in backticks (`controlplane/reconciler.cc`) exists;
#   5. every section a comment or doc names in a doc (docs/OPERATIONS.md, "Fidelity matrix")
#      is in that doc;
#   6. every Markdown file a comment or doc names by its path (test/fuzz/README.md) exists;
#   7. every C++ name docs/ARCHITECTURE.md cites as the place a rule is kept exists.
# Usage: check_docs.sh ROOT   (ROOT: the repository's source tree). Prints one line per
# problem, "file:line: what", and exits 1 when there is any.
set -uo pipefail

root=${1:?usage: check_docs.sh ROOT}
cd "$root" || exit 2
problems=$(mktemp)
trap 'rm -f "$problems"' EXIT
say() { echo "$*" >>"$problems"; }
# Splits a grep -n hit "file:line:text" into $f, $line and $text in the shell itself: a `cut`
# process per hit would be most of this check's time.
split_hit() { f=${hit%%:*}; text=${hit#*:}; line=${text%%:*}; text=${text#*:}; }

# The files a reader meets: sources, build files, scripts and docs, not Bazel's output.
list_files() {
  find . \( -name 'bazel-*' -o -name .git \) -prune -o -type f \( -name '*.cc' -o -name '*.h' \
    -o -name '*.bzl' -o -name 'BUILD' -o -name 'BUILD.bazel' -o -name 'WORKSPACE' \
    -o -name '*.sh' -o -name '*.py' -o -name '*.proto' -o -name '*.md' -o -name '*.yaml' \
    -o -name '*.service' -o -path './scripts/*' -o -path './packaging/*' \) -print |
    sed 's|^\./||' | sort
}
mapfile -t files < <(list_files)
mapfile -t mds < <(printf '%s\n' "${files[@]}" | grep '\.md$')
# This checker and its test name or plant the forbidden patterns, so they are not checked.
mapfile -t checked < <(printf '%s\n' "${files[@]}" |
  grep -vxF -e docs/check_docs.sh -e docs/check_docs_fails_test.sh)

# 1. Pointers outside the repository, and issue numbers.
outside='\.\./shared|/work/shared|shared/spec|how-leash-works|shared/design\.md|(^|[^A-Za-z_./])design\.md|platform\.md|conventions\.md'
issue='[Ii]ssue #?[0-9]+|[Ii]ssue #'
grep -nE "$outside" -- "${checked[@]}" | while IFS= read -r hit; do
  split_hit
  say "$f:$line: points outside the repository: $text"
done
# An issue number in a doc, or in a comment (test data strings are not comments).
in_comment="(//|^[[:space:]]*#).*($issue)"
grep -nE "$issue" -- "${checked[@]}" | while IFS= read -r hit; do
  split_hit
  case "$f" in
    *.md) ;;
    *) [[ $text =~ $in_comment ]] || continue ;;
  esac
  say "$f:$line: carries an issue number: $text"
done

# The anchors of a Markdown file, as GitHub makes them: its headings outside fenced code
# blocks, lower case, punctuation dropped, spaces to hyphens.
anchors() {
  awk '/^```/ { fence = !fence; next }
       !fence && /^#+ / { sub(/^#+ +/, ""); s = tolower($0); gsub(/[^a-z0-9 _-]/, "", s);
                          gsub(/ /, "-", s); print s }' "$1"
}

# 2. Markdown links and anchors.
for md in "${mds[@]}"; do
  dir=$(dirname "$md")
  awk '/^```/ { fence = !fence; next }
       !fence { while (match($0, /\]\([^) ]+\)/)) {
                  print FNR " " substr($0, RSTART + 2, RLENGTH - 3); $0 = substr($0, RSTART + RLENGTH) } }' \
    "$md" | while read -r line target; do
      case "$target" in http://* | https://* | mailto:*) continue ;; esac
      file=${target%%#*}
      anchor=
      [ "$file" != "$target" ] && anchor=${target#*#}
      if [ -z "$file" ]; then
        path=$md
      else
        path=$(realpath -m --relative-to=. "$dir/$file")
      fi
      case "$path" in ../* | /*)
        say "$md:$line: link leaves the repository: $target"; continue ;;
      esac
      if [ ! -e "$path" ]; then
        say "$md:$line: link to a missing file: $target"; continue
      fi
      if [ -n "$anchor" ]; then
        known_anchors=
        [[ "$path" == *.md ]] && known_anchors=$(anchors "$path")
        [[ $'\n'$known_anchors$'\n' == *$'\n'"$anchor"$'\n'* ]] ||
          say "$md:$line: no heading for anchor #$anchor in $path"
      fi
    done
done

# 3. Rules cited from docs/ARCHITECTURE.md.
arch=docs/ARCHITECTURE.md
if [ ! -f "$arch" ]; then
  say "$arch: missing (the rules every comment cites live there)"
else
  known_rules=" $(grep -oE '^\| [SPCNFTLX][0-9]+ \|' "$arch" | grep -oE '[A-Z][0-9]+' | tr '\n' ' ')"
  grep -noE "\brules? [SPCNFTLX][0-9]+((,| and| to| or)? [SPCNFTLX][0-9]+)*" -- "${checked[@]}" |
    while IFS= read -r hit; do
      split_hit
      cited=$text
      while [[ $cited =~ [SPCNFTLX][0-9]+ ]]; do
        rule=${BASH_REMATCH[0]}
        cited=${cited#*"$rule"}
        [[ $known_rules == *" $rule "* ]] ||
          say "$f:$line: cites rule $rule, which $arch does not state"
      done
    done
fi

# 4. Repository paths named in backticks in the docs (a file, a folder, or a Bazel target
# named after its source file).
top='(proto|engine|controlplane|proxy|fswatch|cli|tools_api|test|third_party|scripts|packaging|docs)'
grep -noE "\`$top/[A-Za-z0-9_./-]+\`" -- "${mds[@]}" | while IFS= read -r hit; do
  split_hit
  path=$text
  path=${path//\`/}
  compgen -G "${path%/}*" >/dev/null || say "$f:$line: names a missing path: $path"
done

# 5. Named sections of a doc: docs/X.md, "Section" (or fswatch/README.md, "Section").
grep -noE '(docs/[A-Z]+\.md|([a-z_]+/)*README\.md)[]`)]{0,3}, "[^"]+"' -- "${checked[@]}" | while IFS= read -r hit; do
  split_hit
  ref=$text
  doc=${ref%%,*}
  doc=${doc%%[]\`)]*}
  section=${ref#*\"}
  section=${section%\"}
  where="$f:$line"
  [ -f "$doc" ] || { say "$where: names a section of a missing doc: $doc"; continue; }
  grep -qF -- "$section" "$doc" || say "$where: $doc has no section \"$section\""
done

# 6. Every Markdown file a comment or doc names by its path exists.
grep -noE "\b$top/([A-Za-z0-9_-]+/)*[A-Za-z0-9_-]+\.md\b" -- "${checked[@]}" | while IFS= read -r hit; do
  split_hit
  path=$text
  [ -f "$path" ] || say "$f:$line: names a missing doc: $path"
done

# 7. Every function or class docs/ARCHITECTURE.md names in backticks (`Reconciler::RunPass`,
# `PlanMarks`) is still declared somewhere in the C++ sources, so a rename or a move that
# leaves the rules' "where" column stale fails here.
if [ -f "$arch" ]; then
  declare -A declared=()
  while read -r name; do declared[$name]=1; done < <(printf '%s\n' "${checked[@]}" |
    grep -E '\.(cc|h)$' | xargs -r grep -ohE '\b[A-Z][A-Za-z0-9_]*\b' | sort -u)
  grep -noE '`[A-Z][A-Za-z0-9]*(::[A-Z][A-Za-z0-9]*)?`' "$arch" | while IFS= read -r hit; do
    line=${hit%%:*}
    ident=${hit#*:}
    ident=${ident//\`/}
    for part in ${ident//::/ }; do
      [ -n "${declared[$part]:-}" ] ||
        say "$arch:$line: names \`$ident\`, which no C++ source declares"
    done
  done
fi

if [ -s "$problems" ]; then
  sort -u "$problems"
  echo "check_docs: $(sort -u "$problems" | wc -l) problem(s) in $root" >&2
  exit 1
fi
echo "check_docs: every reference in ${#files[@]} files resolves inside the repository"
