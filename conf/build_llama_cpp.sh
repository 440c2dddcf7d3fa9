#!/usr/bin/env bash
# llama.cpp from the source in llama-cpp-python's sdist, as shared libraries: the Python bindings
# load them from their llama_cpp/lib, and llama.cpp's own server runs beside a copy of them in
# DEST/bin. About 7 minutes on 2 cores, so a build that decodes is kept in the user's cache folder,
# beside pip's, under a key of the version, the build's flags, the compilers and the CPU's
# instruction sets (the build is tuned to this CPU): another checkout on the same machine copies it.
#
# usage: conf/build_llama_cpp.sh PYTHON SDIST VERSION DEST [build|keep|drop]
#   build  the build kept in the cache, else a new one, into DEST/bin and the bindings' lib (default)
#   keep   DEST/bin into the cache: once the smoke decode (devtools/smoke_decode.py) has passed
#   drop   a build that cannot decode: out of the cache, DEST/bin and the bindings' lib
set -euo pipefail
python=$1; sdist=$2; version=$3; dest=$4; mode=${5:-build}
# Tuned to this CPU (GGML_NATIVE: -march=native) but without AMX: ggml's AMX matrix kernels crash at
# their first decode on AMX hosts (SIGSEGV at ldtilecfg, SIGILL at tilezero). GGML_AMX_* alone do not
# keep them out: -march=native defines __AMX_INT8__ and the kernels are compiled; an explicit -mno-*
# wins over what -march implies, whatever their order.
NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN'
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
  -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF
  "-DCMAKE_C_FLAGS=$NO_AMX" "-DCMAKE_CXX_FLAGS=$NO_AMX")
key=$({ echo "$version ${flags[*]}"; cc --version | head -1; c++ --version | head -1
  grep -m1 '^flags' /proc/cpuinfo; } | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/wikigame-spark/llama.cpp-$version-$key
lib=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')/llama_cpp/lib

case $mode in
keep)
  [ -d "$cache" ] && exit 0
  # kept under a temporary name, then renamed: a concurrent checkout sees all of it or none
  mkdir -p "$(dirname "$cache")"
  part=$(mktemp -d "$cache.part-XXXXXX")
  cp -P "$dest"/bin/lib*.so* "$dest/bin/llama-server" "$part/"
  mv -T "$part" "$cache" 2>/dev/null || rm -rf "$part"
  echo "llama.cpp $version: kept in $cache"
  exit 0 ;;
drop)
  rm -rf "$cache" "$dest/bin" "$lib"/lib*.so*
  exit 0 ;;
build) ;;
*) echo "error: mode $mode: one of build, keep, drop" >&2; exit 2 ;;
esac

rm -rf "$dest/src" "$dest/build" "$dest/bin" && mkdir -p "$dest/bin" "$lib"
if [ -x "$cache/llama-server" ]; then
  echo "llama.cpp $version: the build kept in $cache"
  from=$cache
else
  mkdir -p "$dest/src"
  tar xzf "$sdist" -C "$dest/src" --strip-components=3 "llama_cpp_python-$version/vendor/llama.cpp"
  echo "building llama.cpp $version: the bindings' libraries and llama-server (log: $dest/build.log)"
  { cmake -S "$dest/src" -B "$dest/build" "${flags[@]}" > "$dest/build.log" 2>&1 &&
    cmake --build "$dest/build" --target llama-server mtmd -j"$(nproc)" >> "$dest/build.log" 2>&1; } ||
    { echo "error: the llama.cpp build failed; see $dest/build.log"; tail -20 "$dest/build.log"; exit 1; }
  from=$dest/build/bin
fi
cp -P --remove-destination "$from"/lib*.so* "$lib/"  # new files: a process that has them open keeps its own
cp -P "$from"/lib*.so* "$from/llama-server" "$dest/bin/"
rm -rf "$dest/src" "$dest/build"
