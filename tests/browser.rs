//! The web page in headless Chromium, used the way a keyboard-only person
//! uses it: `chessbot serve` on a free port, Chromium driven over the
//! Chrome DevTools Protocol (a small client below), keys sent with
//! `Input.dispatchKeyEvent` (never JavaScript clicks).
//!
//! Steps: open the page; check that every control has an accessible name
//! (Chromium's own accessibility tree), that text contrast meets WCAG 2.2 AA
//! and that Tab reaches the key controls in a sensible order with a visible
//! focus indicator; start a new game in assist mode with the page's own
//! controls (the server drives the simulated arm: `serve --sim-arm`); play
//! a move by walking the on-screen board with the arrow keys, which the arm
//! plays; wait for the robot's reply in the move list and the arm to be
//! idle again; save a 1280x900 screenshot; check that a
//! 390 px wide phone viewport needs no horizontal scrolling.
//!
//! Needs Debian's `chromium` (scripts/install-deps.sh installs it; the
//! README's test command runs that). `CHESSBOT_SKIP_BROWSER=1` skips the
//! test; `CHESSBOT_UPDATE_SCREENSHOT=1` writes the screenshot to
//! docs/screenshots/web.png instead of the target directory.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::{Message, WebSocket};

/// The mode the game is started in, chosen in the page's Mode select by its
/// option value: assist mode, the person's move played by the arm (the
/// server drives the simulated arm: `serve --sim-arm`).
const MODE: &str = "assist";
/// Speed-up of the simulated arm: a 10 s move takes half a second.
const ARM_SPEED: &str = "20";

/// Longest wait for one DevTools command's answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for a process to print its start-up line.
const START_TIMEOUT: Duration = Duration::from_secs(20);
/// Longest wait for the robot's reply (the engine thinks for at most 1 s).
const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

const DESKTOP: (u32, u32) = (1280, 900);
const PHONE: (u32, u32) = (390, 844);
/// The committed screenshot must stay small.
const MAX_SCREENSHOT_BYTES: usize = 300 * 1024;

// ---------------------------------------------------------------- processes

/// A child process killed (with its whole process group) when dropped, with
/// its stderr collected line by line.
struct Proc {
    name: &'static str,
    child: Child,
    log: Arc<Mutex<Vec<String>>>,
    lines: Receiver<String>,
}

impl Proc {
    fn spawn(name: &'static str, cmd: &mut Command) -> Proc {
        use std::os::unix::process::CommandExt;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own process group, so that Drop also ends its helpers
            // (Chromium's renderer and GPU processes).
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, lines) = mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line.clone());
                let _ = tx.send(line);
            }
        });
        Proc {
            name,
            child,
            log,
            lines,
        }
    }

    /// Waits for a stderr line containing `marker` and returns it.
    fn wait_for_line(&mut self, marker: &str) -> String {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(marker) => return line,
                Ok(_) => {}
                Err(_) => {
                    let status = self.child.try_wait().ok().flatten();
                    panic!(
                        "{} did not print {marker:?} within {START_TIMEOUT:?} (exit status: {status:?})\n\
                         --- its stderr ---\n{}",
                        self.name,
                        self.tail(40)
                    );
                }
            }
        }
    }

    fn tail(&self, n: usize) -> String {
        let log = self.log.lock().unwrap();
        log[log.len().saturating_sub(n)..].join("\n")
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        // Only the group this test started (its id is the child's pid).
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", self.child.id())])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CHESSBOT_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in ["chromium", "chromium-browser"] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// The binary under test: cargo's build, or `CHESSBOT_BIN` when set (a copy
/// kept safe from other builds sharing the target directory).
fn chessbot_binary() -> PathBuf {
    std::env::var_os("CHESSBOT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_chessbot")))
}

/// `chessbot serve` on a free port with `args` (the arm, the camera).
fn start_server(dir: &Path, args: &[&str]) -> (Proc, String) {
    let config = dir.join("chessbot.toml");
    std::fs::write(
        &config,
        format!(
            "[service]\nbind = \"127.0.0.1:0\"\nvoice = false\n\n\
             [game]\ngames_dir = {:?}\njournal_dir = {:?}\n\n\
             [engine]\nhash_mb = 16\n",
            dir.join("games"),
            dir.join("journal")
        ),
    )
    .unwrap();
    let mut server = Proc::spawn(
        "chessbot serve",
        Command::new(chessbot_binary())
            .arg("--config")
            .arg(&config)
            .arg("serve")
            .args(args)
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1"),
    );
    let line = server.wait_for_line("web interface at http://");
    let url = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .map(|hostport| format!("http://{}", hostport.trim_end_matches('/')))
        .unwrap_or_else(|| panic!("cannot read the address from {line:?}"));
    (server, url)
}

fn start_chromium(chromium: &Path, profile: &Path) -> (Proc, String) {
    let mut browser = Proc::spawn(
        "chromium",
        Command::new(chromium).args([
            "--headless=new",
            "--remote-debugging-port=0",
            &format!("--user-data-dir={}", profile.display()),
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            &format!("--window-size={},{}", DESKTOP.0, DESKTOP.1),
            "about:blank",
        ]),
    );
    let line = browser.wait_for_line("DevTools listening on ws://");
    let ws = line[line.find("ws://").unwrap()..].trim().to_string();
    (browser, ws)
}

// ------------------------------------------------------ DevTools protocol

/// A minimal Chrome DevTools Protocol client: one websocket to the browser,
/// commands sent to one page through a flattened session.
struct Cdp {
    ws: WebSocket<TcpStream>,
    next_id: u64,
    session: Option<String>,
}

impl Cdp {
    fn connect(url: &str) -> Cdp {
        let hostport = url
            .strip_prefix("ws://")
            .and_then(|r| r.split('/').next())
            .unwrap_or_else(|| panic!("odd DevTools address {url:?}"));
        let stream = TcpStream::connect(hostport)
            .unwrap_or_else(|e| panic!("cannot connect to DevTools at {hostport}: {e}"));
        stream.set_read_timeout(Some(CALL_TIMEOUT)).unwrap();
        let (ws, _) = tungstenite::client(url, stream)
            .unwrap_or_else(|e| panic!("DevTools websocket handshake with {url} failed: {e}"));
        // Short reads from now on, so that every wait checks its deadline.
        ws.get_ref()
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        Cdp {
            ws,
            next_id: 1,
            session: None,
        }
    }

    /// Sends one command and waits for its answer (events are dropped).
    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({ "id": id, "method": method, "params": params });
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        self.ws
            .send(Message::text(msg.to_string()))
            .map_err(|e| format!("{method}: cannot send: {e}"))?;
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            if Instant::now() > deadline {
                return Err(format!("{method}: no answer within {CALL_TIMEOUT:?}"));
            }
            match self.ws.read() {
                Ok(Message::Text(text)) => {
                    let v: Value = serde_json::from_str(text.as_str())
                        .map_err(|e| format!("{method}: bad JSON from DevTools: {e}"))?;
                    if v["id"] == json!(id) {
                        if let Some(err) = v.get("error") {
                            return Err(format!("{method}: {err}"));
                        }
                        return Ok(v["result"].clone());
                    }
                }
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(format!("{method}: DevTools connection failed: {e}")),
            }
        }
    }

    /// Evaluates a JavaScript expression in the page (promises awaited) and
    /// returns its value.
    fn eval(&mut self, expr: &str) -> Result<Value, String> {
        let r = self.call(
            "Runtime.evaluate",
            json!({ "expression": expr, "returnByValue": true, "awaitPromise": true }),
        )?;
        if let Some(ex) = r.get("exceptionDetails") {
            return Err(format!("JavaScript error in {expr:?}: {ex}"));
        }
        Ok(r["result"]["value"].clone())
    }

    /// Presses and releases one key, as a keyboard would.
    fn key(&mut self, key: &str, shift: bool) -> Result<(), String> {
        let (code, vk, text) = match key {
            "Tab" => ("Tab", 9, ""),
            "Enter" => ("Enter", 13, "\r"),
            " " => ("Space", 32, " "),
            "Escape" => ("Escape", 27, ""),
            "ArrowLeft" => ("ArrowLeft", 37, ""),
            "ArrowUp" => ("ArrowUp", 38, ""),
            "ArrowRight" => ("ArrowRight", 39, ""),
            "ArrowDown" => ("ArrowDown", 40, ""),
            other => return Err(format!("the test has no key code for {other:?}")),
        };
        let modifiers = if shift { 8 } else { 0 };
        let mut down = json!({
            "type": if text.is_empty() { "rawKeyDown" } else { "keyDown" },
            "key": key, "code": code, "modifiers": modifiers,
            "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk,
        });
        if !text.is_empty() {
            down["text"] = json!(text);
            down["unmodifiedText"] = json!(text);
        }
        self.call("Input.dispatchKeyEvent", down)?;
        self.call(
            "Input.dispatchKeyEvent",
            json!({ "type": "keyUp", "key": key, "code": code, "modifiers": modifiers,
                    "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk }),
        )?;
        Ok(())
    }

    fn viewport(&mut self, (width, height): (u32, u32), mobile: bool) -> Result<(), String> {
        self.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile }),
        )?;
        // Let layout catch up before anything is measured.
        self.eval("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")?;
        Ok(())
    }
}

/// The page under test, with what is needed to explain a failure.
struct Page {
    cdp: Cdp,
    server: Proc,
}

impl Page {
    /// Stops the test naming the step, with the page's text and the
    /// server's log.
    fn fail(&mut self, step: &str, detail: impl std::fmt::Display) -> ! {
        let text = self
            .cdp
            .eval(PAGE_TEXT_JS)
            .map(|v| v.as_str().unwrap_or("").to_string())
            .unwrap_or_else(|e| format!("(cannot read the page: {e})"));
        panic!(
            "browser test failed at step: {step}\n{detail}\n\
             --- page text ---\n{text}\n--- chessbot serve log (last lines) ---\n{}",
            self.server.tail(20)
        );
    }

    fn eval(&mut self, step: &str, expr: &str) -> Value {
        match self.cdp.eval(expr) {
            Ok(v) => v,
            Err(e) => self.fail(step, e),
        }
    }

    fn call(&mut self, step: &str, method: &str, params: Value) -> Value {
        match self.cdp.call(method, params) {
            Ok(v) => v,
            Err(e) => self.fail(step, e),
        }
    }

    fn key(&mut self, step: &str, key: &str) {
        if let Err(e) = self.cdp.key(key, false) {
            self.fail(step, e)
        }
    }

    fn shift_tab(&mut self, step: &str) {
        if let Err(e) = self.cdp.key("Tab", true) {
            self.fail(step, e)
        }
    }

    /// Polls `expr` until it is truthy; returns its value. Stops at once
    /// when the page shows an error (a refused request).
    fn wait_until(&mut self, step: &str, expr: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let error = self.eval(
                step,
                "(document.getElementById('error') || {}).textContent || ''",
            );
            if let Some(e) = error.as_str().filter(|e| !e.is_empty()) {
                self.fail(step, format!("the page shows an error: {e}"));
            }
            let v = self.eval(step, expr);
            if !(v.is_null() || v == json!(false) || v == json!("") || v == json!(0)) {
                return v;
            }
            if Instant::now() > deadline {
                self.fail(step, format!("still not true after {timeout:?}: {expr}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What has the keyboard focus: the element's id, `sq:e2` for a board
    /// square, or its tag and text.
    fn focused(&mut self, step: &str) -> String {
        self.eval(step, FOCUSED_JS)
            .as_str()
            .unwrap_or("")
            .to_string()
    }

    /// Presses Tab (or Shift+Tab) until `want` has the focus.
    fn tab_to(&mut self, step: &str, want: &str, backwards: bool) {
        let mut seen = Vec::new();
        for _ in 0..60 {
            let now = self.focused(step);
            if now == want {
                return;
            }
            seen.push(now);
            if backwards {
                self.shift_tab(step);
            } else {
                self.key(step, "Tab");
            }
        }
        self.fail(
            step,
            format!(
                "{want} never got the focus; focus went {}",
                seen.join(" > ")
            ),
        );
    }

    /// Presses Tab once and checks where the focus lands.
    fn tab_expect(&mut self, step: &str, want: &str) {
        self.key(step, "Tab");
        let now = self.focused(step);
        if now != want {
            self.fail(
                step,
                format!("Tab moved the focus to {now}, expected {want}"),
            );
        }
    }
}

/// The page's text without the board's glyphs, for failure messages.
const PAGE_TEXT_JS: &str = r##"(() => {
  if (!document.body) return "(no page)";
  const parts = [...document.querySelectorAll("header, main > div > p, section")].map((e) => e.innerText);
  return parts.length ? parts.join("\n") : document.body.innerText;
})()"##;

/// Describes `document.activeElement` (see [`Page::focused`]).
const FOCUSED_JS: &str = r##"(() => {
  const e = document.activeElement;
  if (!e || e === document.body) return "body";
  if (e.dataset && e.dataset.sq) return "sq:" + e.dataset.sq;
  if (e.id) return e.id;
  return e.tagName.toLowerCase() + ":" + (e.textContent || "").trim().slice(0, 30);
})()"##;

/// Shared colour helpers for the page-side checks.
const COLOUR_JS: &str = r##"
  const parse = (c) => {
    const m = /rgba?\(([^)]*)\)/.exec(c);
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => {
    const x = lum(a), y = lum(b);
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  };
  const background = (el) => {
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) return c;
    }
    return [255, 255, 255, 1];
  };
  const describe = (el) => el.id ? "#" + el.id
    : el.tagName.toLowerCase() + (el.textContent ? " '" + el.textContent.trim().slice(0, 30) + "'" : "");
"##;

/// Text whose contrast with its background is under WCAG 2.2 AA (4.5:1,
/// 3:1 for large text), including the board's coordinates and the text in
/// form controls. Returns a list of offenders.
fn contrast_js() -> String {
    format!(
        r##"(() => {{ {COLOUR_JS}
  const bad = [];
  const check = (el, fg, bg, what) => {{
    const cs = getComputedStyle(el);
    const size = parseFloat(cs.fontSize), bold = Number(cs.fontWeight) >= 700;
    const need = (size >= 24 || (bold && size >= 18.66)) ? 3 : 4.5;
    const r = ratio(fg, bg);
    if (r < need) bad.push(`${{what}}: ${{r.toFixed(2)}}:1, needs ${{need}}:1`);
  }};
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n; (n = walker.nextNode()); ) {{
    const el = n.parentElement;
    if (!n.nodeValue.trim() || el.closest("svg") || !el.getClientRects().length) continue;
    if (getComputedStyle(el).visibility !== "visible") continue;
    check(el, parse(getComputedStyle(el).color), background(el), describe(el));
  }}
  for (const el of document.querySelectorAll("input, select, textarea")) {{
    if (!el.getClientRects().length) continue;
    check(el, parse(getComputedStyle(el).color), background(el), describe(el));
  }}
  for (const t of document.querySelectorAll("#board text.coord")) {{
    const rect = t.parentElement.querySelector("rect");
    check(t, parse(getComputedStyle(t).fill), parse(getComputedStyle(rect).fill),
          "board coordinate " + t.textContent + " on " + t.parentElement.dataset.sq);
  }}
  return bad;
}})()"##
    )
}

/// Whether the focused control shows a focus indicator of at least 2 px
/// with 3:1 contrast against what surrounds it. Returns "" when it does,
/// else why not.
fn focus_indicator_js() -> String {
    format!(
        r##"(() => {{ {COLOUR_JS}
  const el = document.activeElement;
  if (!el || el === document.body) return "nothing has the focus";
  if (el.dataset && el.dataset.sq) {{
    const fill = parse(getComputedStyle(el.querySelector("rect")).fill);
    const rings = [...el.querySelectorAll("rect.focus")].map((r) => getComputedStyle(r))
      .filter((s) => s.stroke !== "none" && parseFloat(s.strokeWidth) >= 2);
    if (!rings.length) return "square " + el.dataset.sq + " shows no focus ring";
    const best = Math.max(...rings.map((s) => ratio(parse(s.stroke), fill)));
    return best >= 3 ? "" : `square ${{el.dataset.sq}}: focus ring contrast ${{best.toFixed(2)}}:1 < 3:1`;
  }}
  const cs = getComputedStyle(el);
  if (cs.outlineStyle === "none" || parseFloat(cs.outlineWidth) < 2)
    return describe(el) + " shows no focus outline";
  const r = ratio(parse(cs.outlineColor), background(el.parentElement));
  return r >= 3 ? "" : `${{describe(el)}}: focus outline contrast ${{r.toFixed(2)}}:1 < 3:1`;
}})()"##
    )
}

/// Elements sticking out past the right edge of the viewport.
const OVERFLOW_JS: &str = r##"(() => {
  const w = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.right > w + 0.5 && el.getClientRects().length)
      out.push((el.id ? "#" + el.id : el.tagName.toLowerCase()) + " ends at " + Math.round(r.right) + "px");
  }
  return { scrollWidth: document.documentElement.scrollWidth, clientWidth: w, over: out.slice(0, 8) };
})()"##;

/// Controls smaller than WCAG 2.2's 24 x 24 px minimum target size (links
/// inside text are exempt; the board's squares are checked).
const TARGET_SIZE_JS: &str = r##"(() => {
  const small = [];
  for (const el of document.querySelectorAll("button, input, select, textarea, #board .sq")) {
    if (!el.getClientRects().length) continue;
    const r = el.getBoundingClientRect();
    if (r.width < 24 || r.height < 24)
      small.push((el.id || el.dataset.sq || el.tagName) + " " + Math.round(r.width) + "x" + Math.round(r.height));
  }
  return small;
})()"##;

/// Interactive roles that must carry an accessible name.
const NAMED_ROLES: &[&str] = &[
    "button",
    "link",
    "textbox",
    "searchbox",
    "combobox",
    "listbox",
    "spinbutton",
    "checkbox",
    "radio",
    "slider",
    "switch",
    "gridcell",
    "grid",
    "menuitem",
    "tab",
];

// ---------------------------------------------------------------- the test

/// The browser tests start servers and Chromium of their own; one at a
/// time, so that two do not share the 2 cores and miss their deadlines.
static ONE_BROWSER: Mutex<()> = Mutex::new(());

/// Chromium, unless the browser tests are skipped (`None`).
fn chromium_or_skip() -> Option<PathBuf> {
    if std::env::var("CHESSBOT_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("browser test skipped: CHESSBOT_SKIP_BROWSER=1");
        return None;
    }
    let Some(chromium) = find_chromium() else {
        panic!(
            "headless Chromium is needed for the browser test and is not installed \
             (no `chromium` on PATH). Run scripts/install-deps.sh (the README's test \
             command, scripts/test.sh, runs it), or set CHESSBOT_SKIP_BROWSER=1 to skip."
        );
    };
    Some(chromium)
}

/// A tab of a fresh headless Chromium, attached to a running server.
fn open_tab(chromium: &Path, dir: &Path, server: Proc) -> (Proc, Page) {
    let (browser, devtools) = start_chromium(chromium, &dir.join("profile"));
    let mut cdp = Cdp::connect(&devtools);
    // A tab of our own: the start-up tab may not exist yet when DevTools
    // starts listening.
    let created = cdp
        .call("Target.createTarget", json!({ "url": "about:blank" }))
        .unwrap_or_else(|e| panic!("opening a Chromium tab: {e}"));
    let target = created["targetId"].clone();
    let attached = cdp
        .call(
            "Target.attachToTarget",
            json!({ "targetId": target, "flatten": true }),
        )
        .unwrap_or_else(|e| panic!("attaching to Chromium's tab: {e}"));
    cdp.session = Some(attached["sessionId"].as_str().unwrap().to_string());
    (browser, Page { cdp, server })
}

/// Loads the page at desktop size and waits for its board.
fn open_page(page: &mut Page, base: &str) {
    let step = "open the page";
    if let Err(e) = page.cdp.viewport(DESKTOP, false) {
        page.fail(step, e);
    }
    page.call(step, "Page.navigate", json!({ "url": format!("{base}/") }));
    page.wait_until(
        step,
        "document.readyState === 'complete' && document.querySelectorAll('#board .sq').length === 64",
        Duration::from_secs(10),
    );
}

#[test]
fn keyboard_only_game_in_headless_chromium() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let _one = ONE_BROWSER.lock().unwrap_or_else(|p| p.into_inner());
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let (server, base) = start_server(dir.path(), &["--sim-arm", ARM_SPEED]);
    let (_browser, mut page) = open_tab(&chromium, dir.path(), server);

    // --- open the page
    open_page(&mut page, &base);

    check_names(&mut page);
    check_contrast(&mut page, "text contrast on the fresh page");
    check_tab_order(&mut page);
    check_target_size(&mut page, "target sizes at 1280 px");

    // --- new game through the page's controls, keyboard only
    let step = "start a new game by keyboard";
    page.tab_to(step, "mode", false);
    let option = page.eval(
        step,
        &format!(
            "[...document.getElementById('mode').options].findIndex(o => o.value === '{MODE}')"
        ),
    );
    let option = option
        .as_i64()
        .filter(|i| *i >= 0)
        .unwrap_or_else(|| page.fail(step, format!("the Mode select has no option {MODE:?}")));
    for _ in 0..option {
        page.key(step, "ArrowDown");
    }
    page.tab_expect(step, "color");
    page.tab_expect(step, "level");
    // Level 10 -> 8 with the arrow keys.
    page.key(step, "ArrowDown");
    page.key(step, "ArrowDown");
    // Assist mode shows an Opponent select (default: the engine) on the way.
    // Five-minute clocks, typed into the time control field.
    page.tab_to(step, "tc", false);
    page.call(step, "Input.insertText", json!({ "text": "5+0" }));
    page.tab_expect(step, "fen");
    page.tab_expect(step, "newgame");
    let chosen = page.eval(
        step,
        "[document.getElementById('mode').value, document.getElementById('color').value, \
         document.getElementById('level').value].join(' ')",
    );
    if chosen != json!(format!("{MODE} white 8")) {
        page.fail(
            step,
            format!("the controls read {chosen}, expected \"{MODE} white 8\""),
        );
    }
    page.key(step, "Enter");
    page.wait_until(
        step,
        &format!(
            "document.getElementById('summary').textContent.includes('Mode: {MODE}.') \
             && document.getElementById('summary').textContent.includes('White to move') \
             && document.querySelectorAll('#moves li').length === 0"
        ),
        Duration::from_secs(10),
    );

    // The clocks show, and White's runs down from 5:00.
    let step = "the clocks run";
    page.wait_until(
        step,
        "!document.getElementById('clocks').hidden \
         && document.getElementById('clock-control').textContent === '5+0' \
         && document.getElementById('clock-black').textContent === '5:00' \
         && document.getElementById('clock-white').textContent.startsWith('4:5')",
        Duration::from_secs(5),
    );

    // --- a move on the on-screen board, keyboard only: e2, up, up, e4
    let step = "play e2-e4 on the on-screen board by keyboard";
    page.tab_to(step, "sq:e2", true);
    page.key(step, "Enter");
    page.wait_until(
        step,
        "(document.activeElement.getAttribute('aria-label') || '').includes('selected')",
        Duration::from_secs(2),
    );
    page.key(step, "ArrowUp");
    page.key(step, "ArrowUp");
    let at = page.focused(step);
    if at != "sq:e4" {
        page.fail(step, format!("two ArrowUp from e2 focused {at}, not e4"));
    }
    page.key(step, "Enter");

    // --- the robot's reply appears in the move list
    let step = "wait for the robot's reply in the move list";
    let first = page.wait_until(
        step,
        "(() => { const li = document.querySelector('#moves li'); \
                  return li && li.textContent.trim().split(/\\s+/).length === 2 ? li.textContent.trim() : ''; })()",
        REPLY_TIMEOUT,
    );
    let first = first.as_str().unwrap_or("").to_string();
    if !first.starts_with("e4 ") {
        page.fail(step, format!("first line of the move list is {first:?}"));
    }
    eprintln!("move list: {first}");
    // The arm puts the reply on the board and is idle again.
    let step = "wait for the arm to finish the reply";
    page.wait_until(
        step,
        "document.getElementById('arm').textContent === 'idle'",
        REPLY_TIMEOUT,
    );
    check_contrast(&mut page, "text contrast after the reply");

    // --- screenshot
    let step = "save a screenshot";
    // Typing in the lower form scrolled the page: show it from the top.
    page.eval(step, "window.scrollTo(0, 0)");
    save_screenshot(&mut page, step, "web.png");

    // --- "Fix the board", keyboard only: open it, switch a8 (a black
    // rook) to empty with Enter, move down a rank with the arrow key,
    // then start again from the game
    let step = "fix the board by keyboard";
    page.tab_to(step, "fixopen", false);
    page.key(step, "Enter");
    let n = page.wait_until(
        step,
        "document.querySelectorAll('#fixgrid button[aria-label]').length",
        Duration::from_secs(2),
    );
    if n != json!(64) {
        page.fail(
            step,
            format!("the board to fix has {n} named squares, not 64"),
        );
    }
    page.key(step, "Tab");
    let label = "document.activeElement.getAttribute('aria-label')";
    if page.eval(step, label) != json!("a8: black piece") {
        let got = page.eval(step, label);
        page.fail(step, format!("Tab after opening went to {got}, not a8"));
    }
    // Black -> empty (the square keeps the focus across the redraw);
    // the grid is one Tab stop, arrow keys move inside it.
    page.key(step, "Enter");
    if page.eval(step, label) != json!("a8: empty") {
        let got = page.eval(step, label);
        page.fail(step, format!("Enter on a8 left it {got}"));
    }
    page.key(step, "ArrowDown");
    if page.eval(step, label) != json!("a7: black piece") {
        let got = page.eval(step, label);
        page.fail(step, format!("ArrowDown from a8 went to {got}"));
    }
    page.tab_expect(step, "fixsend");
    page.tab_to(step, "fixreset", false);
    page.key(step, "Enter");
    let a8 = page.eval(
        step,
        "document.querySelector('#fixgrid [data-sq=a8]').getAttribute('aria-label')",
    );
    if a8 != json!("a8: black piece") {
        page.fail(step, format!("starting again left a8 as {a8}"));
    }
    check_contrast(&mut page, "text contrast with the board to fix open");

    // --- phone width: no horizontal scrolling
    let step = "390 px phone viewport";
    if let Err(e) = page.cdp.viewport(PHONE, true) {
        page.fail(step, e);
    }
    let fit = page.eval(step, OVERFLOW_JS);
    if fit["scrollWidth"].as_i64() > fit["clientWidth"].as_i64() {
        page.fail(step, format!("the page scrolls sideways at 390 px: {fit}"));
    }
    check_target_size(&mut page, "target sizes at 390 px");
    check_contrast(&mut page, "text contrast at 390 px");
    let shot = page.call(step, "Page.captureScreenshot", json!({ "format": "png" }));
    if let Ok(png) = base64_decode(shot["data"].as_str().unwrap_or("")) {
        let _ = std::fs::write(
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("web-phone.png"),
            png,
        );
    }

    let _ = page.cdp.call("Browser.close", json!({}));
    eprintln!("browser test took {:.1} s", started.elapsed().as_secs_f64());
}

/// Record mode with a camera: a scripted person's game, rendered by the
/// simulator into an image folder, is watched by the server; the page shows
/// the camera view with its grid, the moves seen on the board appear in the
/// move list, and the live PGN URL serves them.
#[test]
fn record_mode_shows_the_camera_view_and_the_moves_seen() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let _one = ONE_BROWSER.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let frames = dir.path().join("frames");
    let rendered = Command::new(chessbot_binary())
        .args([
            "sim",
            "game",
            "--moves",
            "1. e4 e5 2. Nf3",
            "--width",
            "480",
            "--height",
            "360",
        ])
        .arg("--out")
        .arg(&frames)
        .output()
        .expect("running chessbot sim game");
    assert!(
        rendered.status.success(),
        "sim game failed: {}",
        String::from_utf8_lossy(&rendered.stderr)
    );
    let (server, base) = start_server(dir.path(), &["--frames", frames.to_str().unwrap()]);
    let (_browser, mut page) = open_tab(&chromium, dir.path(), server);
    open_page(&mut page, &base);

    let step = "start a record-mode game";
    page.eval(
        step,
        "(() => { const m = document.getElementById('mode'); m.value = 'record'; \
                  m.dispatchEvent(new Event('change')); \
                  document.getElementById('newgame').click(); return true; })()",
    );
    page.wait_until(
        step,
        "document.getElementById('summary').textContent.includes('Mode: record.')",
        Duration::from_secs(10),
    );

    let step = "the camera view shows";
    page.wait_until(
        step,
        "!document.getElementById('camera-box').hidden \
         && document.getElementById('camera').complete \
         && document.getElementById('camera').naturalWidth === 480",
        Duration::from_secs(10),
    );

    let step = "the moves played on the board appear";
    page.wait_until(
        step,
        "(() => { const t = document.getElementById('moves').textContent.replace(/\\s+/g, ' ').trim(); \
                  return t.includes('e4 e5') && t.includes('Nf3') ? t : ''; })()",
        REPLY_TIMEOUT,
    );
    page.wait_until(
        step,
        "document.getElementById('camera-state').textContent.length > 1",
        Duration::from_secs(2),
    );
    check_names(&mut page);
    check_contrast(
        &mut page,
        "text contrast in record mode with the camera view",
    );

    let step = "the live PGN URL serves the game";
    page.eval(
        step,
        "fetch('/games/current.pgn').then(r => r.text()).then(t => { window.pgnText = t; }); true",
    );
    let pgn = page.wait_until(step, "window.pgnText || ''", Duration::from_secs(5));
    let pgn = pgn.as_str().unwrap_or("").to_string();
    if !pgn.contains("1. e4") || !pgn.contains("e5") || !pgn.contains("2. Nf3") {
        page.fail(step, format!("/games/current.pgn is {pgn:?}"));
    }

    let step = "save a screenshot";
    // Tall enough to show the camera view under the board.
    if let Err(e) = page.cdp.viewport((DESKTOP.0, 1400), false) {
        page.fail(step, e);
    }
    page.eval(step, "window.scrollTo(0, 0)");
    save_screenshot(&mut page, step, "record.jpg");
    let _ = page.cdp.call("Browser.close", json!({}));
}

/// Saves the page as `name`: into docs/screenshots/ (committed for review)
/// with CHESSBOT_UPDATE_SCREENSHOT=1, else into the target folder.
fn save_screenshot(page: &mut Page, step: &str, name: &str) {
    // A page with the camera's picture in it compresses far better as JPEG.
    let params = if name.ends_with(".jpg") {
        json!({ "format": "jpeg", "quality": 80 })
    } else {
        json!({ "format": "png" })
    };
    let shot = page.call(step, "Page.captureScreenshot", params);
    let png =
        base64_decode(shot["data"].as_str().unwrap_or("")).unwrap_or_else(|e| page.fail(step, e));
    let path = if std::env::var("CHESSBOT_UPDATE_SCREENSHOT").as_deref() == Ok("1") {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs/screenshots")
            .join(name)
    } else {
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
    };
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, &png).unwrap();
    eprintln!("screenshot: {} ({} bytes)", path.display(), png.len());
    if png.len() > MAX_SCREENSHOT_BYTES {
        page.fail(
            step,
            format!(
                "the screenshot is {} bytes, over {MAX_SCREENSHOT_BYTES}",
                png.len()
            ),
        );
    }
}

/// Every interactive node in Chromium's accessibility tree has a name.
fn check_names(page: &mut Page) {
    let step = "accessible names";
    let tree = page.call(step, "Accessibility.getFullAXTree", json!({}));
    let nodes = tree["nodes"].as_array().cloned().unwrap_or_default();
    let mut unnamed = Vec::new();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for n in &nodes {
        if n["ignored"] == json!(true) {
            continue;
        }
        let role = n["role"]["value"].as_str().unwrap_or("").to_string();
        if !NAMED_ROLES.contains(&role.as_str()) {
            continue;
        }
        *counts.entry(role.clone()).or_default() += 1;
        let name = n["name"]["value"].as_str().unwrap_or("").trim().to_string();
        if name.is_empty() {
            let node = page
                .cdp
                .call(
                    "DOM.describeNode",
                    json!({ "backendNodeId": n["backendDOMNodeId"] }),
                )
                .map(|d| format!("<{} {}>", d["node"]["localName"], d["node"]["attributes"]))
                .unwrap_or_else(|_| "?".into());
            unnamed.push(format!("{role} {node}"));
        }
    }
    if !unnamed.is_empty() {
        page.fail(
            step,
            format!("controls without an accessible name: {unnamed:?}"),
        );
    }
    // The check saw the page's controls, not an empty tree.
    let seen = |r: &str| counts.get(r).copied().unwrap_or(0);
    if seen("gridcell") != 64 || seen("button") < 8 || seen("combobox") < 2 {
        page.fail(
            step,
            format!("the accessibility tree lacks the page's controls: {counts:?}"),
        );
    }
}

fn check_target_size(page: &mut Page, step: &str) {
    let small = page.eval(step, TARGET_SIZE_JS);
    if small.as_array().is_some_and(|s| !s.is_empty()) {
        page.fail(step, format!("controls under 24 x 24 px: {small}"));
    }
}

fn check_contrast(page: &mut Page, step: &str) {
    let bad = page.eval(step, &contrast_js());
    if bad.as_array().is_some_and(|b| !b.is_empty()) {
        page.fail(step, format!("text under WCAG 2.2 AA contrast: {bad}"));
    }
}

/// Walks the page with Tab from the top: the key controls come in reading
/// order, the board is one stop (arrow keys move inside it), and each stop
/// shows a visible focus indicator.
fn check_tab_order(page: &mut Page) {
    let step = "Tab order and focus indicators";
    let mut order: Vec<String> = Vec::new();
    let indicator = focus_indicator_js();
    for _ in 0..60 {
        page.key(step, "Tab");
        let now = page.focused(step);
        if order.first() == Some(&now) || now == "body" && !order.is_empty() {
            break;
        }
        let why = page.eval(step, &indicator);
        if why.as_str().is_some_and(|w| !w.is_empty()) {
            page.fail(step, format!("invisible focus: {why}"));
        }
        order.push(now);
    }
    eprintln!("tab order: {}", order.join(" > "));
    let squares = order.iter().filter(|s| s.starts_with("sq:")).count();
    if squares != 1 {
        page.fail(
            step,
            format!(
                "the board should be one Tab stop, it was {squares}: {}",
                order.join(" > ")
            ),
        );
    }
    let expected = [
        "estop", "sq:e2", "movetext", "send", "takeback", "resign", "pause", "fixopen", "mode",
        "color", "level", "tc", "fen", "newgame",
    ];
    let mut last = None;
    for want in expected {
        match order.iter().position(|s| s == want) {
            Some(i) if last.is_none_or(|l| i > l) => last = Some(i),
            Some(_) => page.fail(
                step,
                format!(
                    "{want} comes too early in the Tab order: {}",
                    order.join(" > ")
                ),
            ),
            None => page.fail(
                step,
                format!("Tab never reaches {want}: {}", order.join(" > ")),
            ),
        }
    }
}

/// Standard base64 (DevTools' screenshot encoding).
fn base64_decode(s: &str) -> Result<Vec<u8>, String> {
    let val = |c: u8| -> Result<u32, String> {
        Ok(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(format!("bad base64 byte {c}")),
        } as u32)
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let n = chunk.len() * 6 / 8;
        for i in 0..n {
            out.push((acc >> (16 - 8 * i)) as u8);
        }
    }
    if out.is_empty() {
        return Err("empty screenshot".into());
    }
    Ok(out)
}
