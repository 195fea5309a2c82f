#!/usr/bin/env bash
# layers.sh: the #include lines of the tree against the architecture's layers
# (docs/architecture.md). Prints each edge that runs the wrong way and exits 1 if any:
#   - runtime/ never includes lang/, compiler/ or app/ (an emitted program links the runtime
#     alone), and no one includes app/;
#   - lang/ knows no numerics: it includes nothing of compiler/ or runtime/;
#   - runtime's folders form layers, lowest first as RUNTIME_DIRS in the Makefile: a file
#     includes headers of its own folder and of lower ones only;
#   - a runtime header from outside its folder is named with its folder ("nn/mlp.h").
set -uo pipefail
cd "$(dirname "$0")/.."
dirs=$(sed -n 's/^RUNTIME_DIRS := //p' Makefile)
rank() { local i=0 d; for d in $dirs; do [ "$d" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done; echo -1; }
bad=0 edges=0
say() { echo "layers: $*"; bad=$((bad + 1)); }
while IFS= read -r file; do
  top=${file%%/*}
  own=""; [ "$top" = runtime ] && own=$(echo "$file" | cut -d/ -f2)
  while IFS= read -r inc; do
    edges=$((edges + 1))
    # where the include resolves: beside the file first, then -Ilang -Icompiler -Iruntime
    dir=$(dirname "$file")
    if [ -f "$dir/$inc" ]; then target="$dir/$inc"
    elif [ -f "lang/$inc" ]; then target="lang/$inc"
    elif [ -f "compiler/$inc" ]; then target="compiler/$inc"
    elif [ -f "runtime/$inc" ]; then target="runtime/$inc"
    else continue; fi # generated (build/parser.h) or a system header in quotes
    ttop=${target%%/*}
    [ "$ttop" = app ] && [ "$top" != app ] && say "$file includes $target (app/ is included by no one)"
    if [ "$top" = runtime ] && [ "$ttop" != runtime ]; then say "$file includes $target (the runtime includes no compiler, front end or app)"; fi
    if [ "$top" = lang ] && [ "$ttop" != lang ] && [ "$target" != "${target#runtime}" -o "$ttop" = compiler ]; then
      say "$file includes $target (the front end knows no numerics)"; fi
    if [ "$ttop" = runtime ]; then
      tdir=$(echo "$target" | cut -d/ -f2)
      [ "$tdir" = deploy ] && continue
      if [ -n "$own" ] && [ "$own" != deploy ]; then
        [ "$(rank "$tdir")" -gt "$(rank "$own")" ] && say "$file includes $target (runtime/$own is below runtime/$tdir)"
      fi
      if [ "$own" != "$tdir" ] && [ "$inc" = "$(basename "$inc")" ]; then say "$file includes \"$inc\" without its folder ($tdir/)"; fi
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
done < <(git ls-files 'lang/*.[ch]' 'compiler/*.[ch]' 'runtime/*.[ch]' 'app/*.[ch]' 'tests/unit/*.[ch]' 'tests/bench/*.[ch]' 'tests/fuzz/*.[ch]')
echo "layers: $edges include lines read, $bad against the layers"
[ $bad -eq 0 ]
