"""Built-in agents; importing this package registers them."""

from wikigame_spark.agents import embedding, hub, likelihood, llm, oracle, random_choice, tfidf  # noqa: F401
