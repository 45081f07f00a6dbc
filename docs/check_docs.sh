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
#   7. every C++ name docs/ARCHITECTURE.md cites as the place a rule is kept exists;
#   8. comments carry no history: no date, no "#N" or "PR N" reference, no figure pasted from a
#      measurement (figures live in docs/PERFORMANCE.md, with the command that printed them);
#   9. no comment cites the spec the project started from (it lives outside the repository):
#      a comment states the rule in the project's words or cites docs/ARCHITECTURE.md's label;
#  10. every repository source file a comment names by its path (test/fixtures/root.h) exists;
#  11. docs/PERFORMANCE.md is one table whose every row has its six cells (what, target,
#      current, ratio, command, commit), so a row added later fits it.
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

# The comments of every checked file but the Markdown ones, one "file:line:text" line each: in
# C++ and proto the text after //, elsewhere the text after a # that starts the line or
# follows a blank (so "#include" and "${#list[@]}" are not comments).
comments() {
  awk 'FNR == 1 { cfam = FILENAME ~ /\.(cc|h|proto)$/ }
       cfam { i = index($0, "//"); if (i) print FILENAME ":" FNR ":" substr($0, i + 2); next }
       match($0, /(^|[ \t])#/) { print FILENAME ":" FNR ":" substr($0, RSTART + RLENGTH) }' "$@"
}
mapfile -t sources < <(printf '%s\n' "${checked[@]}" | grep -v '\.md$')
comment_lines=$(comments "${sources[@]}")
# comment_hits PERL_REGEX WHAT: says WHAT for every comment the regex matches.
comment_hits() {
  grep -P -- "^[^:]+:[0-9]+:.*$1" <<<"$comment_lines" | while IFS= read -r hit; do
    split_hit
    say "$f:$line: $2: ${text#"${text%%[! ]*}"}"
  done
}

# 8. History in comments. A date, bare or in words (an RFC 3339 time, "2026-12-02T06:00:00Z" or
# "2026-12-02 10:30:01", is a format's example, not a date); a "#N" or "PR N" reference; a
# figure after "measured", "rose by", ...
months='(January|February|March|April|May|June|July|August|September|October|November|December)'
comment_hits "(?<![0-9])(19|20)[0-9]{2}-[01][0-9](-[0-3][0-9])?(?![0-9T:-]| [0-9]{2}:)" "carries a date"
comment_hits "\\b$months( [0-9]{1,2},?)? (19|20)[0-9]{2}\\b|\\b[0-9]{1,2} $months\\b" "carries a date"
comment_hits "(^|[\\s(])#[0-9]+\\b|\\b(PR|[Pp]ull request) ?#?[0-9]+\\b" "carries an issue or PR number"
unit='(ns|µs|us|ms|s|min|bytes|KiB|MiB|GiB|KB|MB|GB|Gbit/s|%|x|×)'
comment_hits "\\b([Mm]easured|[Rr]ose by|[Ff]ell by|[Ww]ent from|[Dd]ropped from|[Ss]ped up)\\b[^.;]*?(?<![A-Za-z0-9_])[0-9][0-9.,]* ?$unit(?![A-Za-z])" \
  "carries a measured figure (docs/PERFORMANCE.md holds figures)"

# 9. The spec, cited from a comment.
comment_hits "(^|[^A-Za-z])([Ss]pec( \\(|:)|[Tt]he spec\\b|[Ss]pec's\\b)" \
  "cites the spec (state the rule, or cite docs/ARCHITECTURE.md's label)"

# 10. A repository source file a comment names by its path (a generated .pb.h is not one).
grep -P -o "^[^:]+:[0-9]+:|(?<![A-Za-z0-9_./-])$top/([A-Za-z0-9_-]+/)*[A-Za-z0-9_-]+\\.(cc|h|sh|bzl|proto|yaml|py)\\b" \
  <<<"$comment_lines" | awk '/:$/ { loc = $0; next } { print loc $0 }' | while IFS= read -r hit; do
  split_hit
  [ -f "$text" ] || say "$f:$line: names a missing file: $text"
done

# 11. The performance page's one table, six cells a row (an escaped \| is inside a cell).
perf=docs/PERFORMANCE.md
if [ -f "$perf" ]; then
  awk '/^```/ { fence = !fence; next }
       !fence && /^\|/ { line = $0; gsub(/\\\|/, "", line); cells = gsub(/\|/, "|", line) - 1
                         if (cells != 6) print FNR ": a table row with " cells " cells, not 6"
                         if ($0 ~ /^\|[ :-]*-[ :|-]*$/) heads++ }
       END { if (heads != 1) print "1: " heads + 0 " tables, not one" }' "$perf" |
    while IFS= read -r hit; do say "$perf:$hit"; done
fi

if [ -s "$problems" ]; then
  sort -u "$problems"
  echo "check_docs: $(sort -u "$problems" | wc -l) problem(s) in $root" >&2
  exit 1
fi
echo "check_docs: every reference in ${#files[@]} files resolves inside the repository"
