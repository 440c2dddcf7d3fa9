#!/usr/bin/env bash
# Spark 4 needs Java 17 or newer; install Debian's JDK when none is there.
set -euo pipefail
major() { java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1; }
if ! command -v java >/dev/null || [ "$(major)" -lt 17 ]; then
  echo "Java 17+ not found"
  bash "$(dirname "$0")/apt_install.sh" openjdk-17-jdk-headless
fi
echo "java $(major) OK"
