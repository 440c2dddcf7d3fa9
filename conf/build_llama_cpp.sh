#!/usr/bin/env bash
# llama.cpp from the source in llama-cpp-python's sdist, as shared libraries: the Python bindings
# load them from their llama_cpp/lib, and llama.cpp's own server runs beside a copy of them in
# DEST/bin. About 7 minutes on 2 cores, so the result is kept in the user's cache folder, beside
# pip's, under a key of the version, the build's flags, the compiler and the CPU's instruction sets
# (the build is tuned to this CPU): another checkout on the same machine copies it.
# usage: conf/build_llama_cpp.sh PYTHON SDIST VERSION DEST
set -euo pipefail
python=$1; sdist=$2; version=$3; dest=$4
flags=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN'
  -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF
  -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF)
key=$({ echo "$version ${flags[*]}"; c++ --version | head -1; grep -m1 '^flags' /proc/cpuinfo; } | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/wikigame-spark/llama.cpp-$version-$key
lib=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')/llama_cpp/lib
rm -rf "$dest/src" "$dest/build" "$dest/bin" && mkdir -p "$dest/bin" "$lib"
if [ -x "$cache/llama-server" ]; then
  echo "llama.cpp $version: the build kept in $cache"
else
  mkdir -p "$dest/src"
  tar xzf "$sdist" -C "$dest/src" --strip-components=3 "llama_cpp_python-$version/vendor/llama.cpp"
  echo "building llama.cpp $version: the bindings' libraries and llama-server (log: $dest/build.log)"
  { cmake -S "$dest/src" -B "$dest/build" "${flags[@]}" > "$dest/build.log" 2>&1 &&
    cmake --build "$dest/build" --target llama-server mtmd -j"$(nproc)" >> "$dest/build.log" 2>&1; } ||
    { echo "error: the llama.cpp build failed; see $dest/build.log"; tail -20 "$dest/build.log"; exit 1; }
  # kept under a temporary name, then renamed: a concurrent checkout sees all of it or none
  mkdir -p "$(dirname "$cache")"
  part=$(mktemp -d "$cache.part-XXXXXX")
  cp -P "$dest"/build/bin/lib*.so* "$dest/build/bin/llama-server" "$part/"
  mv -T "$part" "$cache" 2>/dev/null || rm -rf "$part"
  rm -rf "$dest/src" "$dest/build"
fi
cp -P --remove-destination "$cache"/lib*.so* "$lib/"  # new files: a process that has them open keeps its own
cp -P "$cache"/lib*.so* "$cache/llama-server" "$dest/bin/"
