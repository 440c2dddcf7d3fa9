#!/usr/bin/env bash
# make pack: the jobs' runtime environment for a cluster's executors as one PEX file
# (docs/cluster.md#a-packed-environment). The wheel and its runtime dependencies (EXTRAS: the
# embedding agent's inference runtimes by default, no torch), at the versions conf/constraints-dev.txt
# pins, resolved from a venv of the nodes' Python version and packed by pex without PySpark: the
# executors import the cluster's own, which Spark puts on their PYTHONPATH (--inherit-path=fallback)
# and which matches its JVM. The file runs on any node whose PATH has that Python version
# (its shebang: /usr/bin/env pythonX.Y), wherever it lives; pex unpacks it once per node and user
# (PEX_ROOT, ~/.cache/pex), not once per application. It stays while the wheel's contents, the
# extras, the constraints and the interpreter are unchanged.
#
# usage: conf/pack_env.sh PYTHON(the dev venv's) WHEEL EXTRAS PACK_PYTHON OUT
set -euo pipefail
py=$1; wheel=$2; extras=$3; pack_python=$4; out=$5
env_dir=.cache/pack-env
started=$(date +%s)
# what the file is made of: the wheel's files (not its zip timestamps), the rest as given
key=$("$py" - "$wheel" "$extras" "$pack_python" conf/constraints-dev.txt <<'PY'
import hashlib, subprocess, sys, zipfile
wheel, extras, python, constraints = sys.argv[1:]
h = hashlib.sha256()
with zipfile.ZipFile(wheel) as z:
    for name in sorted(z.namelist()):
        h.update(name.encode() + b"\0" + z.read(name))
version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True).stdout
h.update("\0".join([extras, version, open(constraints).read()]).encode())
print(h.hexdigest())
PY
)
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
  echo "$out: up to date ($(du -h "$out" | cut -f1))"; exit 0
fi
rm -rf "$env_dir" "$out" "$out.key"
"$pack_python" -m venv "$env_dir"
"$env_dir/bin/python" -m pip install -q "$wheel${extras:+[$extras]}" -c conf/constraints-dev.txt
version=$("$env_dir/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
# --pre: the venv holds pre-releases the resolve pinned (OpenTelemetry's semantic conventions)
"$py" -m pex --venv-repository "$env_dir" "wikigame-spark${extras:+[$extras]}" --pre --exclude pyspark \
  --inherit-path=fallback --python-shebang "/usr/bin/env python$version" -o "$out"
echo "$key" > "$out.key"
rm -rf "$env_dir"
has_torch=$("$py" -c 'import sys, zipfile; print(any(n.startswith(".deps/torch-") for n in zipfile.ZipFile(sys.argv[1]).namelist()))' "$out")
echo "$out: $(du -h "$out" | cut -f1), extras [${extras}], torch: ${has_torch}, Python $version (the nodes need python$version on their PATH), built in $(( $(date +%s) - started ))s"
