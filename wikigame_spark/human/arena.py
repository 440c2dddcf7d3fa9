"""The games people play and every player's progress, under the engine's rules.

A player gets the games in ``game_id`` order, skipping those they finished; at each step they are
offered exactly what the engine offers an agent, under the same rules
(:class:`~wikigame_spark.play.rules.Walk`: no revisits; the back button when the run allows it).
Outcomes are the engine's (``success``, ``step_limit``, ``dead_end``) plus ``gave_up`` and
``time_limit``, the latter checked here, on the server, whenever a game is touched.

Every change is journalled (under one lock, with the state) before it is answered, and the state
is rebuilt by replaying the journal through the same rules, so a restarted server resumes each
game where it was. A game's clock counts only while a server runs: it restarts from the time
recorded with the game's last event.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field

from wikigame_spark.graph.worker_graph import WorkerGraph
from wikigame_spark.human.journal import Journal, read_events
from wikigame_spark.ingest.humans import HUMAN
from wikigame_spark.outcomes import DEAD_END, GAVE_UP, STEP_LIMIT, SUCCESS, TIME_LIMIT
from wikigame_spark.play.rules import PAPER_RULES, Rules, Walk
from wikigame_spark.schemas import NO_MODEL_USAGE

MAX_NAME = 40
# Letters or digits first, then letters, digits, spaces and . ' - _ (any script): safe in a URL
# segment, never "." or "..", and readable in a table.
_NAME = re.compile(rf"[^\W_][\w .'-]{{0,{MAX_NAME - 1}}}")


class Refused(Exception):
    """A request the rules refuse; ``status`` is its HTTP status, the game is unchanged."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def check_name(name: str) -> str:
    """A player's name as given, if it is 1–40 letters, digits, spaces or . ' - _ starting with a
    letter or digit; else :class:`Refused` (400)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name != name.strip():
        raise Refused(
            400,
            f"a player's name is 1 to {MAX_NAME} letters, digits, spaces or . ' - _, starting with a letter or digit",
        )
    return name


@dataclass
class Play:
    """One player's game: its route so far, its outcome once over, its clock."""

    player: str
    game: dict
    walk: Walk
    outcome: str | None = None
    elapsed_before: float = 0.0  # seconds recorded by the last event
    resumed_at: float = field(default_factory=time.monotonic)

    @property
    def route(self) -> list[int]:
        return self.walk.route

    @property
    def steps(self) -> int:
        return len(self.route) - 1

    def elapsed(self, now: float) -> float:
        return self.elapsed_before if self.outcome else self.elapsed_before + now - self.resumed_at


class Arena:
    """The games of one run and every player's plays, journalled at ``journal_path``."""

    def __init__(
        self,
        graph: WorkerGraph,
        games: list[dict],
        journal_path: str,
        time_limit: float,
        max_steps: int,
        run: dict,
        rules: Rules = PAPER_RULES,
    ) -> None:
        """``run`` (where the graph and games come from) heads a new journal and must match a resumed one's."""
        self.graph = graph
        self.games = {int(g["game_id"]): g for g in games}
        self.order = sorted(self.games)
        self.time_limit = time_limit
        self.max_steps = max_steps
        self.rules = rules
        self.plays: dict[tuple[str, int], Play] = {}
        self._lock = threading.Lock()
        head = {"event": "run", **run, "time_limit": time_limit, "max_steps": max_steps, "games": len(games)}
        if rules.allow_back:  # a journal of the paper's rules keeps the head it always had
            head["allow_back"] = True
        events = read_events(journal_path)
        if events and events[0] != head:
            changed = sorted(k for k in head.keys() | events[0].keys() if head.get(k) != events[0].get(k))
            raise ValueError(
                f"{journal_path}: this run was started with other settings ({', '.join(changed)}: "
                f"{ {k: events[0].get(k) for k in changed} }); resume it with those or choose another --run-name"
            )
        for event in events[1:]:
            self._apply(event)
        self.journal = Journal(journal_path)
        if not events:
            self.journal.append(head)

    # --- queries ---------------------------------------------------------------------------
    def next_game(self, player: str) -> int | None:
        """The player's unfinished game, else their first game not yet played; None when done."""
        with self._lock:
            for gid in self.order:
                play = self.plays.get((player, gid))
                if play is None or play.outcome is None:
                    return gid
            return None

    def offered(self, play: Play) -> list[int]:
        """The pages the player may move to now (the back page included), as the engine offers them to agents."""
        return [int(n) for n in play.walk.offered(self.graph)]

    def time_left(self, play: Play) -> float | None:
        if not self.time_limit:
            return None
        return max(0.0, self.time_limit - play.elapsed(time.monotonic()))

    def finished(self) -> list[Play]:
        with self._lock:
            return [p for p in self.plays.values() if p.outcome]

    def unfinished(self) -> int:
        with self._lock:
            return sum(p.outcome is None for p in self.plays.values())

    # --- changes -----------------------------------------------------------------------------
    def view(self, player: str, gid: int) -> Play:
        """The player's game ``gid``, started if it is their next one, ended if its time is up."""
        check_name(player)
        self._game(gid)
        with self._lock:
            play = self.plays.get((player, gid))
            if play is None:
                due = next((g for g in self.order if self._open((player, g))), None)
                if due != gid:
                    raise Refused(409, f"game {gid} is not {player}'s next game ({_next_text(due)})")
                self._record({"event": "start", "player": player, "game_id": gid, "elapsed": 0.0})
                play = self.plays[(player, gid)]
            self._expire(play)
            return play

    def move(self, player: str, gid: int, step: int, node: int) -> Play:
        """Follow the link to ``node`` as move number ``step`` (a resent move is refused, not repeated)."""
        play = self._open_play(player, gid)
        with self._lock:
            self._check_open(play)
            if step != play.steps + 1:
                raise Refused(409, f"move {step} of game {gid} is stale: {play.steps} moves made; reload the page")
            if node not in set(self.offered(play)):
                raise Refused(400, f"node {node} is not among the links offered on this page")
            self._record(self._event(play, "move", node=node))
            return play

    def give_up(self, player: str, gid: int) -> Play:
        play = self._open_play(player, gid)
        with self._lock:
            self._check_open(play)
            self._record(self._event(play, "end", outcome=GAVE_UP))
            return play

    def expire_all(self) -> None:
        """End every game whose time is up (at shutdown, so none stays open past its limit)."""
        with self._lock:
            for play in self.plays.values():
                self._expire(play)

    def close(self) -> None:
        self.journal.close()

    # --- internals (callers hold the lock) -------------------------------------------------
    def _game(self, gid: int) -> dict:
        if gid not in self.games:
            raise Refused(404, f"there is no game {gid}")
        return self.games[gid]

    def _open(self, key: tuple[str, int]) -> bool:
        play = self.plays.get(key)
        return play is None or play.outcome is None

    def _open_play(self, player: str, gid: int) -> Play:
        check_name(player)
        self._game(gid)
        with self._lock:
            play = self.plays.get((player, gid))
        if play is None:
            raise Refused(409, f"{player} has not started game {gid}")
        return play

    def _check_open(self, play: Play) -> None:
        self._expire(play)
        if play.outcome == TIME_LIMIT:
            raise Refused(409, f"game {play.game['game_id']} is over: the {self.time_limit:g}-second limit ran out")
        if play.outcome:
            raise Refused(409, f"game {play.game['game_id']} is over ({play.outcome})")

    def _expire(self, play: Play) -> None:
        if play.outcome is None and self.time_limit and play.elapsed(time.monotonic()) >= self.time_limit:
            self._record(self._event(play, "end", outcome=TIME_LIMIT, elapsed=float(self.time_limit)))

    def _event(self, play: Play, kind: str, **fields) -> dict:
        event = {"event": kind, "player": play.player, "game_id": int(play.game["game_id"])}
        event["elapsed"] = round(play.elapsed(time.monotonic()), 3)
        return {**event, **fields}

    def _record(self, event: dict) -> None:
        self._apply(event)
        self.journal.append(event)

    def _apply(self, event: dict) -> None:
        """One event → the state, by the rules; replaying the journal calls this too."""
        key = (event["player"], int(event["game_id"]))
        if event["event"] == "start":
            game = self.games[key[1]]
            play = self.plays[key] = Play(key[0], game, Walk(int(game["source"]), self.rules))
            if play.route[0] == int(game["target"]):
                play.outcome = SUCCESS
            elif not play.walk.offered(self.graph).size:
                play.outcome = DEAD_END
        else:
            play = self.plays[key]
        play.elapsed_before, play.resumed_at = float(event["elapsed"]), time.monotonic()
        if event["event"] == "move":
            play.walk.move(int(event["node"]))
            if play.route[-1] == int(play.game["target"]):
                play.outcome = SUCCESS
            elif play.steps >= self.max_steps:
                play.outcome = STEP_LIMIT
            elif not play.walk.offered(self.graph).size:
                play.outcome = DEAD_END
        elif event["event"] == "end":
            play.outcome = event["outcome"]


def _next_text(due: int | None) -> str:
    return "every game is played" if due is None else f"the next one is game {due}"


def plays_rows(plays: list[Play]) -> list[dict]:
    """Finished plays as PLAYS rows: agent ``human``, ``model`` the player's name, ``seconds`` the
    time played."""
    return [
        {
            "game_id": int(p.game["game_id"]),
            "agent": HUMAN,
            "model": p.player,
            "outcome": p.outcome,
            "steps": p.steps,
            "optimal_steps": int(p.game["optimal_steps"]),
            "route": list(p.route),
            "source": int(p.game["source"]),
            "target": int(p.game["target"]),
            "seconds": float(p.elapsed_before),
            "detail": None,
            **NO_MODEL_USAGE,
        }
        for p in plays
    ]
