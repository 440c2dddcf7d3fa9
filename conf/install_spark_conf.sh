#!/usr/bin/env bash
# The project's Spark settings for the venv's own Spark: spark-submit (and every session the venv's
# pyspark starts) reads $SPARK_HOME/conf, SPARK_HOME being the installed pyspark package, so the jobs
# get the project's memory, partitions, log levels and jars from any working directory without
# SPARK_CONF_DIR. --conf, --master and SPARK_CONF_DIR still override it.
# usage: conf/install_spark_conf.sh PYTHON PROJECT_DIR
set -euo pipefail
python=$1; project=$(cd "$2" && pwd)
home=$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
mkdir -p "$home/conf"
jar=$(ls "$project"/jars/graphframes-spark4_2.13-*.jar | head -1)
{
  echo "# Written by conf/install_spark_conf.sh from $project/conf/spark-defaults.conf"
  grep -v '^#' "$project/conf/spark-defaults.conf" | grep -v '^\s*$'
  echo "spark.jars                            $jar"
  echo "spark.driver.extraClassPath           $project/jars/*"
  echo "spark.executor.extraClassPath         $project/jars/*"
} > "$home/conf/spark-defaults.conf"
cp "$project/wikigame_spark/log4j2.properties" "$home/conf/log4j2.properties"
echo "Spark settings installed in $home/conf"
