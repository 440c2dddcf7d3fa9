#!/usr/bin/env bash
# Debian packages for `make install`: one apt at a time (the steps `make -j` runs side by side share
# apt's lock), and dpkg's hundreds of progress lines kept in a log, shown only when apt fails.
# usage: conf/apt_install.sh PACKAGE...
set -euo pipefail
log=$(mktemp /tmp/wikigame-apt-XXXXXX.log)
echo "installing $* from Debian's packages"
if ! DEBIAN_FRONTEND=noninteractive flock /tmp/wikigame-apt.lock \
  sh -c 'apt-get update -qq && apt-get install -y -qq "$@"' apt "$@" >"$log" 2>&1; then
  echo "error: apt-get install $* failed (log: $log)"; tail -20 "$log"; exit 1
fi
rm -f "$log"
