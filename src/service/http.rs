//! The web interface and JSON API (axum), served by the robot process.
//!
//! Reads: `GET /api/state`, `GET /api/events` (server-sent events, one
//! status object per change), `GET /games/current.pgn`. Every action is a
//! `POST` under `/api/` with a small JSON body. Errors are JSON
//! `{"error": "..."}` with a 4xx status; bodies over [`MAX_BODY_BYTES`] are
//! refused with 413.
//!
//! Security: the server binds to loopback by default. When a token is
//! configured, every request that changes anything must carry
//! `Authorization: Bearer TOKEN`; reads need it too unless
//! `public_reads` is set.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde::Deserialize;
use shakmaty::Role;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::{Stream, StreamExt};

use super::core::{CommandError, Effect, NewGameRequest};
use super::runtime::Service;
use crate::game::Claim;

/// Largest request body accepted: every command fits in a few hundred bytes.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

const INDEX_HTML: &str = include_str!("web/index.html");

/// Access rules for the HTTP server.
#[derive(Debug, Clone, Default)]
pub struct Access {
    pub token: Option<String>,
    pub public_reads: bool,
}

#[derive(Clone)]
struct AppState {
    service: Arc<Service>,
    access: Arc<Access>,
}

/// A JSON error reply.
struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, axum::Json(serde_json::json!({ "error": self.1 }))).into_response()
    }
}

impl From<CommandError> for ApiError {
    fn from(e: CommandError) -> Self {
        let code = match &e {
            CommandError::NoGame
            | CommandError::NotYourTurn
            | CommandError::Paused
            | CommandError::ArmStopped(_) => StatusCode::CONFLICT,
            CommandError::Session(crate::game::session::SessionError::Game(_)) => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            // The disk refused the journal: not the person's fault.
            CommandError::Session(_) => StatusCode::INTERNAL_SERVER_ERROR,
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        ApiError(code, e.to_string())
    }
}

/// `Json` whose rejections are JSON errors that say what was wrong.
struct Body<T>(T);

impl<S, T> FromRequest<S> for Body<T>
where
    axum::Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Body(v)),
            Err(r) => Err(ApiError(r.status(), r.body_text())),
        }
    }
}

/// Builds the router.
pub fn router(service: Arc<Service>, access: Access) -> Router {
    let state = AppState {
        service,
        access: Arc::new(access),
    };
    Router::new()
        .route("/", get(index))
        .route("/api/state", get(state_json))
        .route("/api/events", get(events))
        .route("/games/current.pgn", get(current_pgn))
        .route("/api/camera.jpg", get(camera_jpg))
        .route("/api/game/new", post(new_game))
        .route("/api/game/finish", post(finish_game))
        .route("/api/move", post(play_move))
        .route("/api/board", post(board_shown))
        .route("/api/promotion", post(promotion))
        .route("/api/takeback", post(take_back))
        .route("/api/resign", post(resign))
        .route("/api/draw/offer", post(offer_draw))
        .route("/api/draw/accept", post(accept_draw))
        .route("/api/draw/claim", post(claim_draw))
        .route("/api/pause", post(pause))
        .route("/api/resume", post(resume))
        .route("/api/estop", post(estop))
        .route("/api/calibrate/board", post(calibrate_board))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(state.clone(), check_access))
        .with_state(state)
}

async fn check_access(State(st): State<AppState>, req: Request, next: Next) -> Response {
    if let Some(token) = &st.access.token {
        let is_read = req.method() == Method::GET || req.method() == Method::HEAD;
        let allowed = (is_read && st.access.public_reads) || bearer_matches(req.headers(), token);
        if !allowed {
            return ApiError(
                StatusCode::UNAUTHORIZED,
                "this server needs `Authorization: Bearer <token>` (the token from the config)"
                    .into(),
            )
            .into_response();
        }
    }
    next.run(req).await
}

fn bearer_matches(headers: &HeaderMap, token: &str) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| constant_time_eq(given.as_bytes(), token.as_bytes()))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn not_found() -> ApiError {
    ApiError(StatusCode::NOT_FOUND, "no such page or API endpoint".into())
}

async fn index() -> Html<&'static str> {
    Html(INDEX_HTML)
}

async fn state_json(State(st): State<AppState>) -> impl IntoResponse {
    axum::Json(st.service.status())
}

async fn current_pgn(State(st): State<AppState>) -> Response {
    let pgn = st.service.core().session().map(|s| s.pgn());
    match pgn {
        Some(p) => (
            [(
                header::CONTENT_TYPE,
                "application/x-chess-pgn; charset=utf-8",
            )],
            p,
        )
            .into_response(),
        None => ApiError(StatusCode::NOT_FOUND, "no game is running".into()).into_response(),
    }
}

async fn camera_jpg(State(st): State<AppState>) -> Response {
    match st.service.camera_image() {
        Some(jpeg) => (
            [
                (header::CONTENT_TYPE, "image/jpeg"),
                (header::CACHE_CONTROL, "no-store"),
            ],
            jpeg.as_ref().clone(),
        )
            .into_response(),
        None => ApiError(
            StatusCode::NOT_FOUND,
            "no camera picture yet: no camera is watching the board".into(),
        )
        .into_response(),
    }
}

async fn events(State(st): State<AppState>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let first = st.service.status();
    let initial = tokio_stream::once(first);
    let updates = BroadcastStream::new(st.service.subscribe()).filter_map(Result::ok);
    let stream = initial.chain(updates).map(|status| {
        Ok(Event::default()
            .event("status")
            .json_data(&status)
            .unwrap_or_else(|_| Event::default().data("{}")))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

fn done(
    st: &AppState,
    r: Result<Vec<Effect>, CommandError>,
) -> Result<axum::Json<super::core::Status>, ApiError> {
    let effects = r?;
    st.service.apply(effects);
    Ok(axum::Json(st.service.status()))
}

type Reply = Result<axum::Json<super::core::Status>, ApiError>;

async fn new_game(State(st): State<AppState>, Body(req): Body<NewGameRequest>) -> Reply {
    let now = st.service.now_ms();
    let r = st.service.core().new_game(req, now);
    done(&st, r)
}

async fn finish_game(State(st): State<AppState>) -> Result<impl IntoResponse, ApiError> {
    let path = st.service.core().finish()?;
    st.service.apply(Vec::new());
    Ok(axum::Json(
        serde_json::json!({ "pgn_file": path.map(|p| p.display().to_string()) }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MoveBody {
    /// SAN, UCI or a lenient form.
    #[serde(rename = "move")]
    mv: String,
}

async fn play_move(State(st): State<AppState>, Body(body): Body<MoveBody>) -> Reply {
    let now = st.service.now_ms();
    let r = st.service.core().human_move(&body.mv, now);
    done(&st, r)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BoardBody {
    /// Eight ranks, rank 8 first, of `W`, `B` or `.`, joined by `/`.
    occupancy: String,
}

async fn board_shown(State(st): State<AppState>, Body(body): Body<BoardBody>) -> Reply {
    let occ = crate::vision::parse_occupancy_string(&body.occupancy)
        .map_err(|e| ApiError(StatusCode::UNPROCESSABLE_ENTITY, e.to_string()))?;
    let now = st.service.now_ms();
    let r = st.service.core().board_shown(&occ, now);
    done(&st, r)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PromotionBody {
    /// `q`, `r`, `b` or `n`.
    piece: String,
}

async fn promotion(State(st): State<AppState>, Body(body): Body<PromotionBody>) -> Reply {
    let role = match body.piece.to_ascii_lowercase().as_str() {
        "q" | "queen" => Role::Queen,
        "r" | "rook" => Role::Rook,
        "b" | "bishop" => Role::Bishop,
        "n" | "knight" => Role::Knight,
        other => {
            return Err(ApiError(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("piece {other:?}: expected q, r, b or n"),
            ))
        }
    };
    let now = st.service.now_ms();
    let r = st.service.core().choose_promotion(role, now);
    done(&st, r)
}

async fn take_back(State(st): State<AppState>) -> Reply {
    let r = st.service.core().take_back();
    done(&st, r)
}

async fn resign(State(st): State<AppState>) -> Reply {
    let r = st.service.core().resign();
    done(&st, r)
}

async fn offer_draw(State(st): State<AppState>) -> Reply {
    let r = {
        let mut core = st.service.core();
        match core.offer_draw() {
            Ok(mut e) if core.mode() != super::core::Mode::Record => {
                // The engine answers at once from its last evaluation.
                core.engine_answers_draw().map(|more| {
                    e.extend(more);
                    e
                })
            }
            other => other,
        }
    };
    done(&st, r)
}

async fn accept_draw(State(st): State<AppState>) -> Reply {
    let r = st.service.core().accept_draw();
    done(&st, r)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ClaimBody {
    claim: Claim,
}

async fn claim_draw(State(st): State<AppState>, Body(body): Body<ClaimBody>) -> Reply {
    let r = st.service.core().claim_draw(body.claim);
    done(&st, r)
}

async fn pause(State(st): State<AppState>) -> Reply {
    let e = st.service.core().pause();
    done(&st, Ok(e))
}

async fn resume(State(st): State<AppState>) -> Reply {
    let e = st.service.core().resume();
    done(&st, Ok(e))
}

async fn calibrate_board(State(st): State<AppState>) -> Reply {
    if !st.service.request_board_calibration() {
        return Err(ApiError(
            StatusCode::CONFLICT,
            "no camera loop is watching the board: start `chessbot serve` with --camera (or --video/--images)".into(),
        ));
    }
    Ok(axum::Json(st.service.status()))
}

async fn estop(State(st): State<AppState>) -> Reply {
    let e = st.service.core().emergency_stop();
    done(&st, Ok(e))
}
