"""Parsing human game logs (plain Python, no Spark)."""

import pytest

from wikigame_spark.ingest import humans

PAPER_HEADER = "Num\tSuccess?\tSteps\tTime (m:s)\tStartPage\tEndPage\tOptimalSteps"


def test_the_papers_layout():
    text = "\n".join(
        [
            PAPER_HEADER,
            "0\tYes\t8.0\t04:51\tRomas_Kalanta\tJaponeja\t5",
            "1\tNo\t18.0\t\tdagda\tKaune\t6",
            "14\tNo\t\t\tBryn Celyn\tMoso Island\t5",
            "",
        ]
    )
    games, rejected = humans.parse_tsv(text, "h.tsv")
    assert rejected == []
    assert games[0] == humans.HumanGame(2, 0, "Romas Kalanta", "Japoneja", True, 8, 5, 291.0)
    assert games[1].start_title == "Dagda" and not games[1].success and games[1].seconds is None
    assert games[2].game_id == 14 and games[2].steps is None


def test_other_column_names_and_order():
    text = "source\ttarget\toptimal_steps\tsteps\tfound_target\tseconds\nA b\tC\t3\t4\ttrue\t12.5\n"
    games, _ = humans.parse_tsv(text, "x.tsv", case="case-sensitive")
    assert games == [humans.HumanGame(2, 1, "A b", "C", True, 4, 3, 12.5)]


def test_rows_that_cannot_be_plays_are_rejected_with_a_reason():
    text = "\n".join(
        [
            PAPER_HEADER,
            "1\tYes\t\t01:00\tA\tB\t3",
            "2\tYes\t2\t01:00\tA\tB\t3",
            "3\tNo\t5\t\tA\tB\t",
            "4\tNo\t5\t\t\tB\t2",
            "5\tYes\t4\t1:02:03\tA\tB\t3",
        ]
    )
    games, rejected = humans.parse_tsv(text, "h.tsv")
    assert [(r["game_id"], r["reason"]) for r in rejected] == [
        (1, "success_without_steps"),
        (2, "steps_below_optimal"),
        (3, "no_optimal_steps"),
        (4, "no_titles"),
    ]
    assert [g.game_id for g in games] == [5] and games[0].seconds == 3723.0


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("1\tMaybe\t3\t\tA\tB\t2", r"h.tsv:2: success 'Maybe' is not yes/no"),
        ("1\tYes\t3.5\t\tA\tB\t2", r"h.tsv:2: steps '3.5' is not a whole number"),
        ("1\tYes\t3\tsoon\tA\tB\t2", r"h.tsv:2: time 'soon'"),
    ],
)
def test_malformed_values_name_the_line(line, message):
    with pytest.raises(humans.HumanLogError, match=message):
        humans.parse_tsv(f"{PAPER_HEADER}\n{line}\n", "h.tsv")


def test_missing_columns_and_duplicates():
    with pytest.raises(humans.HumanLogError, match="lacks optimal"):
        humans.parse_tsv("start\tend\tsuccess\tsteps\nA\tB\tyes\t3\n", "h.tsv")
    with pytest.raises(humans.HumanLogError, match="game number 1 appears twice"):
        humans.parse_tsv(f"{PAPER_HEADER}\n1\tNo\t\t\tA\tB\t2\n1\tNo\t\t\tA\tB\t2\n", "h.tsv")


def test_titles_are_normalised_like_the_graphs():
    assert humans.normalise_title("  ģeografeja__of_x ") == "Ģeografeja of x"
    assert humans.normalise_title("ebay", "case-sensitive") == "ebay"
