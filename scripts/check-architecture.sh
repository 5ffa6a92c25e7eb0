#!/usr/bin/env bash
# Checks that every Go file and function ARCHITECTURE.md names still
# exists: a `dir/file.go`, a `file.go:Func` or `file.go:Type.Method`
# written in backquotes. A file named without its directory is looked
# up by its base name anywhere in the tree. Then that the store's arrows
# run one way: its contract (supervisor/store) imports neither driver,
# and neither driver the other. Run from anywhere; exit 1 names each
# reference that is gone and each arrow that points back.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=0
while read -r ref; do
	file=${ref%%:*}
	name=""
	[[ $ref == *:* ]] && name=${ref#*:}
	if [[ $file == */* ]]; then
		candidates=$(find . -path "./$file" -o -path "./*/$file" 2>/dev/null | head -5)
	else
		candidates=$(find . -name "$file" -not -path './.git/*' 2>/dev/null)
	fi
	if [[ -z $candidates ]]; then
		echo "ARCHITECTURE.md: no file $file ($ref)"
		missing=1
		continue
	fi
	[[ -z $name ]] && continue
	if [[ $name == *.* ]]; then
		pattern="^func \([a-z]+ \*?${name%%.*}\) ${name#*.}[(\[]"
	else
		pattern="^(func (\([^)]*\) )?|type |var |const )${name}\b"
	fi
	# shellcheck disable=SC2086
	if ! grep -Eq "$pattern" $candidates; then
		echo "ARCHITECTURE.md: no ${name} in ${file}"
		missing=1
	fi
done < <(grep -oE '`[A-Za-z0-9_./-]+\.go(:[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?)?`' ARCHITECTURE.md | tr -d '`' | sort -u)
module=$(go list -m)
for pkg in supervisor/store supervisor/store/bolt supervisor/store/etcd; do
	deps=$(go list -deps "./$pkg")
	for driver in supervisor/store/bolt supervisor/store/etcd; do
		[[ $pkg == "$driver" ]] && continue
		if grep -qx "$module/$driver" <<<"$deps"; then
			echo "$pkg imports $driver: the store's arrows run from the drivers to the contract"
			missing=1
		fi
	done
done
exit $missing
