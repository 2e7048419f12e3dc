#!/bin/bash
# README's figures against the reproduction, and its plug-in names against `pmlab plugins`.
#
#   tests/readme_results.sh          check (run by `make test`)
#   tests/readme_results.sh update   rewrite README's results block from a fresh run
#
# The simulated sections (device, workloads, pmweaver, ppo, lalea) are deterministic for a fixed
# seed: README's block between `<!-- results:begin -->` and `<!-- results:end -->` must hold
# exactly the headline lines `pmlab reproduce --only SECTION` (full size) writes for them. pmec
# and nvcache are timed on the machine at hand; README states no figure of theirs.
# Every plug-in name README's "What works today" table shows in backticks on a plug-in row must
# be one `pmlab plugins` lists.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
pmlab="$root/target/release/pmlab"
readme="$root/README.md"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
sections="device workloads pmweaver ppo lalea"
# Each section into a folder of its own, on both cores: ppo (the longest, single-threaded)
# beside the others in turn.
section() {
    "$pmlab" reproduce --only "$1" --out "$out/run-$1" >/dev/null 2>"$out/$1.log" ||
        { echo "readme: pmlab reproduce --only $1 failed"; cat "$out/$1.log"; return 1; }
}
section ppo & ppo=$!
for s in $sections; do
    [ "$s" = ppo ] || section "$s" || { wait "$ppo" || true; exit 1; }
done
wait "$ppo" || exit 1
fresh=$(for s in $sections; do cat "$out/run-$s/$s/headline.md"; done)
block=$(awk '/<!-- results:begin -->/{f=1; next} /<!-- results:end -->/{f=0} f' "$readme")
if [ "${1:-check}" = update ]; then
    { awk '/<!-- results:begin -->/{print; exit} {print}' "$readme"
      echo "$fresh"
      awk '/<!-- results:end -->/{f=1} f' "$readme"; } > "$out/README.md"
    cp "$out/README.md" "$readme"
    echo "readme: results block rewritten from a fresh run"
else
    [ -n "$block" ] || { echo "readme: no results block in README.md"; exit 1; }
    if [ "$block" != "$fresh" ]; then
        echo "readme: README's results differ from what pmlab reproduce measures now" \
             "(tests/readme_results.sh update rewrites them):"
        diff <(echo "$block") <(echo "$fresh") || true
        exit 1
    fi
    echo "readme: results block matches a fresh run of $sections"
fi

# Plug-in names on README's plug-in rows.
known=$("$pmlab" plugins | awk '{print $2}' | sort -u)
bad=0
while IFS= read -r name; do
    grep -qxF -- "$name" <<< "$known" || { echo "readme: README names plug-in \`$name\`, which pmlab plugins does not list"; bad=1; }
done < <(grep -E '^\| [A-Za-z-]+ plug-ins' "$readme" | grep -oE '`[a-z][a-z0-9+-]*`' | tr -d '`' | sort -u)
[ $bad = 0 ] && echo "readme: every plug-in README names is registered"
exit $bad
