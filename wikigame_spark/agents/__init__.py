"""Built-in agents; importing this package registers them."""

from wikigame_spark.agents import embedding, likelihood, llm, random_choice, tfidf  # noqa: F401
