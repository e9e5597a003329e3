"""Local HTTP API (FastAPI) over :mod:`selene_dag.service`: ask, the tiered context of all
notes, compaction, health.

Requests share one DuckDB connection per database file and each runs on its own cursor
(``service.SharedStore``), so they read concurrently and the file is left to other
processes between bursts. Errors: a store locked by another process or an index that
cannot be refreshed is 503, a note, session or chunk the home does not hold 404, any other
user error (:class:`SeleneError`) 422 with its message; a body over the limit 413;
anything else is a bug and is a 500 with its traceback in the server log.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

# Imported here, not lazily on the first static file the server sends: a first import
# inside the server's event loop thread can race another thread's import (Python 3.11's
# parser is not thread-safe: "AST constructor recursion depth mismatch").
from anyio import open_file as _eager_open_file  # noqa: F401
from fastapi import FastAPI, Request
from fastapi.exception_handlers import http_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from selene_dag import service
from selene_dag.api_schema import (
    AskResponse,
    CompactResponse,
    ContextResponse,
    HealthResponse,
    ShowResponse,
)
from selene_dag.config import Settings, load_settings
from selene_dag.context.messages import validate_digest, validate_messages
from selene_dag.context.tokens import MAX_MODEL_NAME, check_model_name, tokenizer_info
from selene_dag.errors import (
    MAX_BUDGET,
    NotFoundError,
    SeleneError,
    UsageError,
    with_home,
    write_failure,
)
from selene_dag.retrieval.citations import MAX_CITATION_CHARS
from selene_dag.retrieval.search import parse_sources
from selene_dag.text import reject_lone_surrogates

# A field the endpoint does not know is an error, not ignored: "budjet" silently asked with
# the default.
_STRICT = ConfigDict(extra="forbid")
# A request body larger than this is refused (413) before it is read.
MAX_BODY_BYTES = 64 * 1024 * 1024


class _TooLarge(BaseException):  # FastAPI turns an Exception in body parsing into a 400
    pass


class BodyLimit:
    """ASGI middleware refusing a request body over ``limit`` bytes with 413: by its
    Content-Length before it is read, or while it is read when it comes in chunks (a
    chunked upload carries no length, and was read whole into memory)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.limit:
            await self._refuse(send, f"request body of {int(length):,} bytes")
            return
        received = 0
        started = False

        async def counted() -> Any:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _TooLarge
            return message

        async def watched(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if not started:
                await self._refuse(send, "request body")
        except ClientDisconnect:
            # The client left while sending its body: no one to answer, and nothing wrong
            # with the server (each was an 80-line traceback in its log).
            return

    async def _refuse(self, send: Any, what: str) -> None:
        response = JSONResponse(
            status_code=413,
            content={"detail": f"{what} is over the {self.limit:,}-byte limit"},
        )
        await response({"type": "http"}, None, send)  # type: ignore[arg-type]


# What the published schema says a model's name is, so that a client built from it does
# not send one the server refuses ("", " ", 300 characters).
_MODEL_NAME_SCHEMA: dict[str, Any] = {"minLength": 1, "maxLength": MAX_MODEL_NAME, "pattern": r"\S"}


def _model_name(value: str | None) -> str | None:
    """A request's ``model`` field: None (the default model) or a name a model can have."""
    return value if value is None else check_model_name(value)


ModelName = Annotated[str | None, AfterValidator(_model_name)]


class AskRequest(BaseModel):
    """Body of ``POST /ask``."""

    model_config = _STRICT

    question: str = Field(description="The question to build context for.")
    budget: int = Field(
        gt=0, le=MAX_BUDGET, strict=True, description="Token budget of the pack (target model)."
    )
    sources: list[str] | str | None = Field(
        default=None,
        description="Subset of ['notes', 'sessions'] (default both): a list, or one "
        "comma-separated string as the CLI's --sources takes it.",
    )
    model: ModelName = Field(
        default=None,
        description="Target model; default SELENE_MODEL.",
        json_schema_extra=_MODEL_NAME_SCHEMA,
    )

    @field_validator("sources", mode="before")
    @classmethod
    def _sources_shape(cls, value: Any) -> Any:
        # One sentence, not pydantic's account of each branch of the union it tried.
        if value is None:
            return value
        if isinstance(value, str) or (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            # Before the names are quoted in a message (one that cannot be encoded was a 500).
            for name in [value] if isinstance(value, str) else value:
                reject_lone_surrogates(name, "sources")
            parse_sources(value)  # an unknown name is this field's problem, listed as such
            return value
        raise ValueError(
            'sources must be a list of names ("notes", "sessions") or one comma-separated string'
        )


class ContextRequest(BaseModel):
    """Body of ``POST /context``."""

    model_config = _STRICT

    budget: int = Field(gt=0, le=MAX_BUDGET, strict=True, description="Token budget of the pack.")
    model: ModelName = Field(
        default=None,
        description="Target model; default SELENE_MODEL.",
        json_schema_extra=_MODEL_NAME_SCHEMA,
    )


class CompactRequest(BaseModel):
    """Body of ``POST /compact``."""

    model_config = _STRICT

    messages: list[dict[str, Any]] = Field(description="Chat messages {role, content, ...}.")
    window: int = Field(gt=0, le=MAX_BUDGET, strict=True, description="Context window in tokens.")
    digest: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Memory digest, {stage, decision, superseded?} entries: the result "
        "always carries the decisions not superseded, in one system message.",
    )
    model: ModelName = Field(
        default=None,
        description="Target model; default SELENE_MODEL.",
        json_schema_extra=_MODEL_NAME_SCHEMA,
    )

    @field_validator("messages")
    @classmethod
    def _messages(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        validate_messages(value)  # each message's problem is this field's, listed as such
        return value

    @field_validator("digest")
    @classmethod
    def _digest(cls, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        validate_digest(value)
        return value


class ShowRequest(BaseModel):
    """Body of ``POST /show``."""

    model_config = _STRICT

    citation: str = Field(
        description="A citation as a pack item gives it (its location or citation, or its id).",
        json_schema_extra={"minLength": 1, "maxLength": MAX_CITATION_CHARS, "pattern": r"\S"},
    )
    around: int = Field(
        default=0, ge=0, strict=True, description="Lines or events of context on each side."
    )


class FieldError(BaseModel):
    """One field's problem in a request body: where (``loc``), what (``msg``) and its kind."""

    loc: list[str | int]
    msg: str
    type: str | None = None


class ErrorBody(BaseModel):
    """The body of every error answer: ``detail`` says in one sentence what is wrong and
    what to do; a 422 also lists each problem in ``errors``, ``loc`` naming its field
    (``["body"]`` for the request as a whole)."""

    detail: str
    errors: list[FieldError] | None = None


def _answers(ok: type[BaseModel], *statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` of a route: its document (``ok``), the error statuses it
    answers with, and 500."""
    return {200: {"model": ok, "description": ok.__doc__ or ""}, **_errors(*statuses, 500)}


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` for the error statuses a route answers with."""
    said = {
        404: "What the request names is not in the home (no notes yet, no such note or session).",
        413: "The request body is over the size limit.",
        422: "The request is not valid: `detail` says why, `errors` lists each field's problem.",
        503: "The store is held by another process past the wait, or the home has no database.",
        507: "The disk takes no more writes (full, over a quota, read-only): `detail` names the file.",
        500: "An unexpected error: `detail` names its kind; the server's log has the traceback.",
    }
    return {status: {"model": ErrorBody, "description": said[status]} for status in statuses}


# What a field's problem asks of the sender, for the kinds a client hits most (the
# validator's own words otherwise: "Input should be a valid integer").
_FIELD_PROBLEMS = {
    "missing": "is required",
    "int_type": "must be a whole number (not a string or a float)",
    "int_parsing": "must be a whole number (not a string or a float)",
    "int_from_float": "must be a whole number (not a string or a float)",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "extra_forbidden": "is not a field of this request (see /docs)",
}


def _field_problem(error: dict[str, Any], ctx: Any) -> str:
    """One field's problem in words that say what to send."""
    kind = error.get("type")
    limits = ctx if isinstance(ctx, dict) else {}
    if kind == "greater_than" and "gt" in limits:
        return f"must be more than {limits['gt']:,}"
    if kind == "greater_than_equal" and "ge" in limits:
        return f"must be {limits['ge']:,} or more"
    if kind == "less_than_equal" and "le" in limits:
        return f"must be at most {limits['le']:,}"
    return _FIELD_PROBLEMS.get(str(kind), str(error.get("msg", "")))


def _message(error: dict[str, Any]) -> str:
    """A field problem's ``msg``: a validator's own sentence without pydantic's "Value
    error, " before it."""
    ctx = error.get("ctx")
    if error.get("type") == "value_error" and isinstance(ctx, dict) and "error" in ctx:
        return str(ctx["error"])
    return str(error.get("msg", ""))


SWAGGER_PREFIX = "/static/swagger-ui"


def _mount_docs(app: FastAPI) -> None:
    """Serve the Swagger UI at /docs from the files the swagger-ui-bundle package ships
    (FastAPI's default page loads its scripts from a CDN)."""
    from swagger_ui_bundle import swagger_ui_path

    app.mount(SWAGGER_PREFIX, StaticFiles(directory=str(swagger_ui_path)), name="swagger-ui")

    @app.api_route("/docs", methods=["GET", "HEAD"], include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title="selene-dag API",
            swagger_js_url=f"{SWAGGER_PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{SWAGGER_PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{SWAGGER_PREFIX}/favicon-32x32.png",
        )


async def _unreadable_body(request: Request) -> str:
    """Why a body the JSON parser gave up on cannot be read: not UTF-8, a number of too
    many digits, or nesting too deep (each was "not UTF-8 text")."""
    try:
        body = await request.body()
    except RuntimeError:  # the stream was read already and not kept
        return "it is not UTF-8 text, or not JSON this server reads"
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return "it is not UTF-8 text"
    try:
        json.loads(text)
    except RecursionError:
        return "it is nested too deep"
    except ValueError as exc:  # "Exceeds the limit (4300 digits) for integer string …"
        if "digits" in str(exc):
            return "it holds a number of more than 4,300 digits"
        return str(exc).split(";")[0]
    return "it is not JSON this server reads"


def create_app(settings_provider: Callable[[], Settings] = load_settings) -> FastAPI:
    """The API; ``settings_provider`` is called per request (SELENE_* read at request time)."""
    shared = service.SharedStore()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        shared.close()  # release the file at shutdown, lingering or not

    app = FastAPI(
        title="selene-dag",
        description="Token-budgeted context from notes and AI coding-agent sessions.",
        lifespan=lifespan,
        docs_url=None,  # served below from local files: /docs works with no network
        redoc_url=None,  # ReDoc loads its script from a CDN: not offline
    )
    app.state.store = shared
    _mount_docs(app)

    @app.exception_handler(SeleneError)
    async def user_error(request: Request, exc: SeleneError) -> JSONResponse:
        if write_failure(exc) is not None:  # a full disk under a user error: the disk's
            return await server_error(request, exc)
        if isinstance(exc, service.UNAVAILABLE_ERRORS):
            status = 503
        elif isinstance(exc, NotFoundError):  # a note, session or chunk the home lacks
            status = 404
        else:
            status = 422
        # A command the message suggests must read the served home, wherever it is run
        # (the settings themselves at fault: the message as it is).
        try:
            detail = with_home(str(exc), settings_provider().home)
        except SeleneError:
            detail = str(exc)
        content: dict[str, Any] = {"detail": detail}
        if status == 422:  # every 422 lists its problems; this one is the request's whole
            loc = list(getattr(exc, "loc", ("body",)))
            content["errors"] = [{"loc": loc, "msg": detail, "type": "value_error"}]
        return JSONResponse(status_code=status, content=content)

    @app.exception_handler(Exception)
    async def server_error(_: Request, exc: Exception) -> JSONResponse:
        # A disk that takes no more writes (full, quota, read-only) is the operator's to
        # fix: 507 with what to do, as the CLI says it. Anything else: a 500 in the same
        # shape as every other error (the server's log keeps the traceback).
        line = write_failure(exc)
        if line is not None:
            line = line.replace("run the command again", "send the request again")
            return JSONResponse(status_code=507, content={"detail": line})
        detail = f"internal error ({type(exc).__name__}); the server's log has the details"
        return JSONResponse(status_code=500, content={"detail": detail})

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Any:
        # A body that is not UTF-8 fails before validation, as a bare 400: one shape for
        # every bad body (422, a sentence).
        if exc.status_code == 400 and exc.detail == "There was an error parsing the body":
            detail = f"the body is not JSON ({await _unreadable_body(request)})"
            errors = [{"loc": ["body"], "msg": detail, "type": "json_invalid"}]
            return JSONResponse(status_code=422, content={"detail": detail, "errors": errors})
        # A route or a method the API does not have: say where the routes are listed.
        where = f"{request.method} {request.url.path}"
        if exc.status_code == 404 and exc.detail == "Not Found":
            detail = f"no route {where}: the routes are listed at /docs"
            return JSONResponse(status_code=404, content={"detail": detail})
        if exc.status_code == 405 and exc.detail == "Method Not Allowed":
            detail = f"{request.url.path} does not take {request.method}: see /docs"
            return JSONResponse(status_code=405, content={"detail": detail}, headers=exc.headers)
        return await http_exception_handler(request, exc)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        # One shape for every 422: ``detail`` is a sentence; ``errors`` lists each field's.
        errors = [
            {
                # Pydantic places a JSON error at its character offset: the body as a whole.
                "loc": ["body"] if e.get("type") == "json_invalid" else list(e.get("loc", ())),
                "msg": _message(e),
                "type": e.get("type"),
            }
            for e in exc.errors()
        ]
        # A body sent without a JSON content type is not read as JSON at all.
        not_an_object = (
            "the body is not a JSON object"
            if "json" in request.headers.get("content-type", "").lower()
            else "the body is not read as JSON without the header Content-Type: application/json"
        )
        detail = "; ".join(
            f"the body is not JSON ({e['msg']})"
            if e["type"] == "json_invalid"
            else not_an_object
            if e["type"] in ("model_attributes_type", "dict_type") and tuple(e["loc"]) == ("body",)
            else e["msg"]  # our validators' sentences name their field
            if e["type"] == "value_error"
            else f"{'.'.join(str(part) for part in e['loc'] if part != 'body') or 'body'}: "
            f"{_field_problem(e, raw.get('ctx'))}"
            for e, raw in zip(errors, exc.errors(), strict=True)
        )
        return JSONResponse(status_code=422, content={"detail": detail, "errors": errors})

    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)

    @app.get("/health/compression", response_model=None, responses=_answers(HealthResponse, 503))
    def health_compression() -> dict[str, Any]:
        """Compression health: tiers, essence progress, thread digests."""
        settings = settings_provider()
        with shared.cursor(settings) as cur:
            return service.health_in(cur, settings)

    # HEAD as well (not a second operation in the schema): a monitor probing the server's
    # health with HEAD got a 405.
    app.add_api_route(
        "/health/compression", health_compression, methods=["HEAD"], include_in_schema=False
    )

    @app.post("/ask", response_model=None, responses=_answers(AskResponse, 413, 422, 503, 507))
    def ask_endpoint(body: AskRequest) -> dict[str, Any]:
        """The JSON document of ``selene-dag ask --format json``: ``text`` is the exact pack
        the md form prints, ``items`` its parts with citations."""
        settings = settings_provider()
        result = service.ask_shared(
            shared, settings, body.question, body.budget, model=body.model, sources=body.sources
        )
        return result.to_json()

    @app.post("/show", response_model=None, responses=_answers(ShowResponse, 404, 413, 422, 503))
    def show_endpoint(body: ShowRequest) -> dict[str, Any]:
        """What a citation of a pack points at, whole (as ``selene-dag show``): ``text``,
        and where it comes from: ``source`` (the note's file or the session's transcript)
        and ``records`` (the transcript's records of the events shown)."""
        settings = settings_provider()
        with shared.cursor(settings) as cur:
            try:
                return service.show_in(cur, body.citation, body.around).to_json(body.citation)
            except UsageError as exc:
                # Read against the home (a note's id alone is one): a text that is no
                # citation is this field's problem.
                exc.loc = ("body", "citation")
                raise

    @app.post(
        "/context",
        response_model=None,
        responses=_answers(ContextResponse, 404, 413, 422, 503, 507),
    )
    def context_endpoint(body: ContextRequest) -> dict[str, Any]:
        """The tiered pack of all notes (as ``selene-dag context``)."""
        settings = settings_provider()
        with shared.cursor(settings) as cur:
            return service.context_in(cur, settings, body.budget, body.model)

    @app.post("/compact", response_model=None, responses=_answers(CompactResponse, 413, 422, 507))
    def compact_endpoint(body: CompactRequest) -> dict[str, Any]:
        """Compact ``messages`` to fit a ``window``-token context (as ``selene-dag
        compact``: the configured engine writes the summary, a model's cached in the
        home's ``llm_cache``)."""
        settings = settings_provider()
        model = service.target_model(settings, body.model)
        report = service.compact(
            settings, body.messages, body.window, model, digest=body.digest, shared=shared
        )
        counted = tokenizer_info(model)
        return {
            "window": report.window,
            "model": model,
            "tokenizer": counted.name,
            "tokens_exact": counted.exact,
            "tokens_before": report.tokens_before,
            "tokens_after": report.tokens_after,
            "compaction_threshold": report.compaction_threshold,
            "resolved_at": report.resolved_at,
            "removed": report.removed,
            "shrink_stage_detail": report.shrink_stage_detail,
            "compacted_stages": list(report.compacted_stages),
            "steps": [
                {
                    "name": s.name,
                    "removed": s.removed,
                    "tokens_before": s.tokens_before,
                    "tokens_after": s.tokens_after,
                    "detail": s.detail,
                }
                for s in report.steps
            ],
            "messages": report.messages,
        }

    return app
