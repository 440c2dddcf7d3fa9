"""A report table's cells: counts as integers even when a missing value made their column float,
rates with the report's rounding, a missing value as a dash, in Markdown and HTML alike."""

import numpy as np
import pandas as pd

from wikigame_spark.document import html_table, md_table


def test_whole_number_columns_print_as_integers():
    df = pd.DataFrame({"games": [76.0, np.nan], "success_rate": [0.85, 1.0], "rating": [249.0, -12.0], "n": [1, 2]})
    assert md_table(df).splitlines()[2:] == ["| 76 | 0.850 | 249 | 1 |", "| – | 1.000 | -12 | 2 |"]
    assert "<td>76</td><td>0.850</td><td>249</td><td>1</td>" in html_table(df)
