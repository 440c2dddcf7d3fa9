"""The web app: plain HTML forms over the :class:`~wikigame_spark.human.arena.Arena`.

Every page works without JavaScript (links are submit buttons, summaries show on hover or focus
by CSS, an expired page refreshes itself through ``<noscript>``); the only script counts the time
down. Titles, summaries and names are text: Jinja2 escapes everything it prints. Path and form
values are parsed as names and numbers only, never used as paths.

Routes: ``GET /`` (name form), ``POST /start``, ``GET /player/{name}`` (→ their next game),
``GET /player/{name}/game/{id}``, ``POST …/move`` (``step``, ``node``), ``POST …/give-up``.
"""

from __future__ import annotations

import os
import urllib.parse

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from wikigame_spark.human.arena import Arena, Refused, check_name

TEMPLATES = Jinja2Templates(directory=os.path.join(os.path.dirname(__file__), "templates"))
MAX_FORM_BYTES = 4096


def create_app(arena: Arena, title: str = "Wikipedia Game") -> Starlette:
    """The app for ``arena``; ``title`` names the graph on every page."""

    def page(request: Request, template: str, status: int = 200, **context) -> Response:
        return TEMPLATES.TemplateResponse(request, template, {"site": title, **context}, status_code=status)

    def game_url(player: str, gid: int) -> str:
        return f"/player/{urllib.parse.quote(player, safe='')}/game/{gid}"

    async def form(request: Request) -> dict[str, str]:
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise Refused(413, "form too large")
        try:
            pairs = urllib.parse.parse_qsl(body.decode("utf-8"), strict_parsing=False)
        except UnicodeDecodeError as e:
            raise Refused(400, "the form is not UTF-8") from e
        return dict(pairs)

    def number(value: str | None, what: str) -> int:
        try:
            return int(value or "")
        except ValueError as e:
            raise Refused(400, f"{what} must be a whole number, not {value!r}") from e

    async def index(request: Request) -> Response:
        return page(request, "index.html", games=len(arena.order), time_limit=arena.time_limit)

    async def start(request: Request) -> Response:
        name = (await form(request)).get("name", "").strip()
        try:
            check_name(name)
        except Refused as e:
            return page(
                request,
                "index.html",
                e.status,
                games=len(arena.order),
                time_limit=arena.time_limit,
                error=e.message,
                name=name,
            )
        return RedirectResponse(f"/player/{urllib.parse.quote(name, safe='')}", 303)

    async def player(request: Request) -> Response:
        name = check_name(request.path_params["name"])
        gid = arena.next_game(name)
        if gid is None:
            return page(request, "done.html", player=name, games=len(arena.order))
        return RedirectResponse(game_url(name, gid), 303)

    async def game(request: Request) -> Response:
        name, gid = request.path_params["name"], number(request.path_params["gid"], "the game")
        play = await run_in_threadpool(arena.view, name, gid)
        g = arena.graph
        links = sorted(arena.offered(play), key=lambda n: (g.titles[n].casefold(), g.titles[n], n))
        return page(
            request,
            "game.html",
            play=play,
            player=name,
            gid=gid,
            url=game_url(name, gid),
            titles=g.titles,
            summaries=g.summaries,
            links=links if play.outcome is None else [],
            time_left=arena.time_left(play),
        )

    async def move(request: Request) -> Response:
        name, gid = request.path_params["name"], number(request.path_params["gid"], "the game")
        fields = await form(request)
        step, node = number(fields.get("step"), "step"), number(fields.get("node"), "node")
        await run_in_threadpool(arena.move, name, gid, step, node)
        return RedirectResponse(game_url(name, gid), 303)

    async def give_up(request: Request) -> Response:
        name, gid = request.path_params["name"], number(request.path_params["gid"], "the game")
        await run_in_threadpool(arena.give_up, name, gid)
        return RedirectResponse(game_url(name, gid), 303)

    async def refused(request: Request, exc: Refused) -> Response:
        name = request.path_params.get("name")
        back = None
        if name:
            try:
                back = f"/player/{urllib.parse.quote(check_name(name), safe='')}"
            except Refused:
                back = None
        return page(request, "error.html", exc.status, message=exc.message, back=back)

    async def http_error(request: Request, exc: HTTPException) -> Response:
        response = page(request, "error.html", exc.status_code, message=exc.detail, back=None)
        response.headers.update(exc.headers or {})  # e.g. a 405's Allow
        return response

    routes = [
        Route("/", index),
        Route("/start", start, methods=["POST"]),
        Route("/player/{name}", player),
        Route("/player/{name}/game/{gid}", game),
        Route("/player/{name}/game/{gid}/move", move, methods=["POST"]),
        Route("/player/{name}/game/{gid}/give-up", give_up, methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={Refused: refused, HTTPException: http_error})
