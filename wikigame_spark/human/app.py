"""The web app: plain HTML forms over the :class:`~wikigame_spark.human.arena.Arena`.

Every page works without JavaScript (links are submit buttons, summaries show on hover or focus
by CSS, an expired page refreshes itself through ``<noscript>``); the only script counts the time
down. Titles, summaries and names are text: Jinja2 escapes everything it prints. Path and form
values are parsed as names and numbers only, never used as paths.

A player's name belongs to the browser that started it (:class:`Sessions`): its pages and moves
need that browser's signed cookie. Every POST must come from a page of this server (its
``Origin``, else its ``Referer``), and a form body is read only up to :data:`MAX_FORM_BYTES`.

Routes: ``GET /`` (name form), ``POST /start``, ``GET /player/{name}`` (→ their next game),
``GET /player/{name}/game/{id}``, ``POST …/move`` (``step``, ``node``), ``POST …/give-up``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import threading
import urllib.parse

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from wikigame_spark.human.arena import Arena, Refused, check_name
from wikigame_spark.human.journal import Journal, read_events

TEMPLATES = Jinja2Templates(directory=os.path.join(os.path.dirname(__file__), "templates"))
MAX_FORM_BYTES = 4096
SECRET = "secret"
PLAYERS = "players.jsonl"
COOKIE_DAYS = 30


class Sessions:
    """Which browser plays which name.

    A browser is a random id signed with the run's secret (HMAC-SHA256) and kept in a cookie; a
    name belongs to the first browser that starts it. The secret (mode 0600) and the names' owners
    (fsynced, like the journal) live in the run's folder, so a restarted server still knows its
    players; neither is logged nor recorded with the plays.
    """

    def __init__(self, folder: str) -> None:
        os.makedirs(folder, exist_ok=True)
        self._secret = _secret(os.path.join(folder, SECRET))
        # One cookie name per run: cookies are per host, not per port, and two runs may share a host.
        self.cookie = "wikigame-" + self._sign("cookie")[:12]
        path = os.path.join(folder, PLAYERS)
        self._owners = {e["player"]: e["browser"] for e in read_events(path)}
        self._journal = Journal(path)
        self._lock = threading.Lock()

    def _sign(self, value: str) -> str:
        return hmac.new(self._secret, value.encode("utf-8"), hashlib.sha256).hexdigest()

    def browser(self, request: Request) -> str | None:
        """The browser id of a request whose cookie this run signed, else None."""
        browser, _, signature = request.cookies.get(self.cookie, "").partition(".")
        if browser and hmac.compare_digest(signature, self._sign(browser)):
            return browser
        return None

    def new_browser(self) -> str:
        return secrets.token_hex(16)

    def set_cookie(self, response: Response, browser: str) -> None:
        token = f"{browser}.{self._sign(browser)}"
        response.set_cookie(self.cookie, token, max_age=COOKIE_DAYS * 86400, path="/", httponly=True, samesite="strict")

    def claim(self, name: str, browser: str) -> bool:
        """Give ``name`` to ``browser`` unless another browser has it; whether ``browser`` owns it."""
        with self._lock:
            owner = self._owners.get(name)
            if owner is None:
                self._journal.append({"player": name, "browser": browser})
                self._owners[name] = owner = browser
            return owner == browser

    def require(self, request: Request, name: str) -> None:
        """Refuse (403) a request for ``name`` from any browser but the one that started it."""
        browser = self.browser(request)
        if browser is None or self._owners.get(name) != browser:
            raise Refused(
                403,
                f"{name}'s games are played in the browser that started them; "
                "to play here, start with a name of your own",
            )


def _secret(path: str) -> bytes:
    """The run's secret at ``path``, made (readable by this user only) on the run's first start."""
    try:
        with open(path, "rb") as f:
            secret = f.read()
        if len(secret) == 32:
            return secret
    except FileNotFoundError:
        pass
    secret = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(secret)
        f.flush()
        os.fsync(f.fileno())
    return secret


def _origin(url: str) -> tuple[str, str, int | None] | None:
    try:
        parts = urllib.parse.urlsplit(url)
        default = {"http": 80, "https": 443}.get(parts.scheme)
        return (parts.scheme, (parts.hostname or "").lower(), parts.port or default) if parts.hostname else None
    except ValueError:
        return None


def check_same_origin(request: Request) -> None:
    """Refuse (403) a POST that a page of another site sent (CSRF): its ``Origin`` (or, from a
    browser that sends none, its ``Referer``) must be this server's own address."""
    sent = request.headers.get("origin") or request.headers.get("referer") or ""
    own = _origin(f"{request.url.scheme}://{request.headers.get('host', '')}/")
    if own is None or _origin(sent) != own:
        raise Refused(403, "a form of this game must be sent from one of its own pages")


async def read_form(request: Request) -> dict[str, str]:
    """The form fields of a body read up to :data:`MAX_FORM_BYTES`: a longer one is refused (413)
    as soon as its ``Content-Length`` says so, or once that much has arrived, never buffered whole."""
    too_large = Refused(413, f"a form of this game is at most {MAX_FORM_BYTES} bytes")
    length = request.headers.get("content-length")
    if length is not None and not (length.isdigit() and int(length) <= MAX_FORM_BYTES):
        raise too_large
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise too_large
    try:
        return dict(urllib.parse.parse_qsl(body.decode("utf-8"), strict_parsing=False))
    except UnicodeDecodeError as e:
        raise Refused(400, "the form is not UTF-8") from e


def create_app(arena: Arena, title: str = "Wikipedia Game", sessions: Sessions | None = None) -> Starlette:
    """The app for ``arena``; ``title`` names the graph on every page. ``sessions``: the run's
    players' browsers, by default kept beside the arena's journal."""
    sessions = sessions or Sessions(os.path.dirname(os.path.abspath(arena.journal.path)))

    def page(request: Request, template: str, status: int = 200, **context) -> Response:
        return TEMPLATES.TemplateResponse(request, template, {"site": title, **context}, status_code=status)

    def game_url(player: str, gid: int) -> str:
        return f"/player/{urllib.parse.quote(player, safe='')}/game/{gid}"

    def player_of(request: Request) -> str:
        """The path's player name, if this request comes from their browser."""
        name = check_name(request.path_params["name"])
        sessions.require(request, name)
        return name

    def number(value: str | None, what: str) -> int:
        try:
            return int(value or "")
        except ValueError as e:
            raise Refused(400, f"{what} must be a whole number, not {value!r}") from e

    async def index(request: Request) -> Response:
        return page(request, "index.html", games=len(arena.order), time_limit=arena.time_limit)

    async def start(request: Request) -> Response:
        check_same_origin(request)
        name = (await read_form(request)).get("name", "").strip()
        browser = sessions.browser(request) or sessions.new_browser()
        try:
            check_name(name)
            if not await run_in_threadpool(sessions.claim, name, browser):
                raise Refused(403, f"{name!r} is being played in another browser; choose another name")
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
        response = RedirectResponse(f"/player/{urllib.parse.quote(name, safe='')}", 303)
        sessions.set_cookie(response, browser)
        return response

    async def player(request: Request) -> Response:
        name = player_of(request)
        gid = arena.next_game(name)
        if gid is None:
            return page(request, "done.html", player=name, games=len(arena.order))
        return RedirectResponse(game_url(name, gid), 303)

    async def game(request: Request) -> Response:
        name, gid = player_of(request), number(request.path_params["gid"], "the game")
        play = await run_in_threadpool(arena.view, name, gid)
        g = arena.graph
        back = play.walk.back_page
        offered = [n for n in arena.offered(play) if n != back]
        links = sorted(offered, key=lambda n: (g.titles[n].casefold(), g.titles[n], n))
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
            back=back if play.outcome is None else None,
            time_left=arena.time_left(play),
        )

    async def move(request: Request) -> Response:
        check_same_origin(request)
        name, gid = player_of(request), number(request.path_params["gid"], "the game")
        fields = await read_form(request)
        step, node = number(fields.get("step"), "step"), number(fields.get("node"), "node")
        await run_in_threadpool(arena.move, name, gid, step, node)
        return RedirectResponse(game_url(name, gid), 303)

    async def give_up(request: Request) -> Response:
        check_same_origin(request)
        name, gid = player_of(request), number(request.path_params["gid"], "the game")
        await read_form(request)  # no fields, but the same limit
        await run_in_threadpool(arena.give_up, name, gid)
        return RedirectResponse(game_url(name, gid), 303)

    async def refused(request: Request, exc: Refused) -> Response:
        name = request.path_params.get("name")
        back = None
        if name and exc.status != 403:
            try:
                back = f"/player/{urllib.parse.quote(check_name(name), safe='')}"
            except Refused:
                back = None
        response = page(request, "error.html", exc.status, message=exc.message, back=back)
        if exc.status == 413:  # the rest of the body is not read: the connection cannot carry another request
            response.headers["connection"] = "close"
        return response

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
