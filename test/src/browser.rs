//! A small Chrome DevTools Protocol client for browser tests: headless Chromium started with
//! `--remote-debugging-pipe`, which reads NUL-terminated JSON commands on its fd 3 and writes
//! NUL-terminated replies and events on its fd 4. `bash` maps those to the child's stdin and
//! stdout (no `pre_exec`, no websocket). Pages are targets attached with `flatten: true`, so
//! every command names its session.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

/// How long one protocol command may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, String>>>>>;

/// A headless Chromium process.
pub struct Browser {
    child: Child,
    stdin: tokio::sync::Mutex<ChildStdin>,
    pending: Pending,
    next_id: AtomicU64,
    reader: tokio::task::JoinHandle<()>,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts `chromium` (Debian's package; `.ci/run` installs it) with a fresh profile.
    pub async fn launch() -> anyhow::Result<Browser> {
        let profile = tempfile::tempdir()?;
        let script = format!(
            "exec chromium --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
             --no-first-run --no-default-browser-check --disable-extensions \
             --remote-debugging-pipe --user-data-dir='{}' about:blank \
             3<&0 4>&1 </dev/null >/dev/null 2>/dev/null",
            profile.path().display()
        );
        let mut child = Command::new("bash")
            .arg("-c")
            .arg(script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting chromium (install Debian's `chromium` package)")?;
        let stdin = child.stdin.take().context("chromium stdin")?;
        let stdout = child.stdout.take().context("chromium stdout")?;
        let pending: Pending = Arc::default();
        let replies = pending.clone();
        let reader = tokio::spawn(async move {
            let mut lines = BufReader::new(stdout);
            loop {
                let mut message = Vec::new();
                match lines.read_until(0, &mut message).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if message.last() == Some(&0) {
                    message.pop();
                }
                let Ok(value) = serde_json::from_slice::<Value>(&message) else {
                    continue;
                };
                let Some(id) = value.get("id").and_then(Value::as_u64) else {
                    continue; // an event
                };
                let waiter = replies
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id);
                if let Some(waiter) = waiter {
                    let reply = match value.get("error") {
                        Some(error) => Err(error.to_string()),
                        None => Ok(value.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    let _ = waiter.send(reply);
                }
            }
            // Chromium is gone: fail whoever still waits.
            replies.lock().unwrap_or_else(|e| e.into_inner()).clear();
        });
        let browser = Browser {
            child,
            stdin: tokio::sync::Mutex::new(stdin),
            pending,
            next_id: AtomicU64::new(1),
            reader,
            _profile: profile,
        };
        browser
            .call("Browser.getVersion", json!({}), None)
            .await
            .context("chromium does not answer on its debugging pipe")?;
        Ok(browser)
    }

    /// Sends `method` (to a page's `session`, or to the browser) and waits for its result.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> anyhow::Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = session {
            message["sessionId"] = json!(session);
        }
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        let mut bytes = serde_json::to_vec(&message)?;
        bytes.push(0);
        {
            let mut stdin = self.stdin.lock().await;
            stdin
                .write_all(&bytes)
                .await
                .context("writing to chromium")?;
            stdin.flush().await?;
        }
        match tokio::time::timeout(CALL_TIMEOUT, rx).await {
            Ok(Ok(Ok(result))) => Ok(result),
            Ok(Ok(Err(error))) => bail!("{method}: {error}"),
            Ok(Err(_)) => bail!("{method}: chromium exited"),
            Err(_) => bail!("{method}: no answer in {CALL_TIMEOUT:?}"),
        }
    }

    /// A new tab, 1280×900.
    pub async fn new_page(&self) -> anyhow::Result<Page<'_>> {
        let target = self
            .call("Target.createTarget", json!({"url": "about:blank"}), None)
            .await?;
        let target_id = target["targetId"].as_str().context("targetId")?.to_owned();
        let attached = self
            .call(
                "Target.attachToTarget",
                json!({"targetId": target_id, "flatten": true}),
                None,
            )
            .await?;
        let session = attached["sessionId"]
            .as_str()
            .context("sessionId")?
            .to_owned();
        let page = Page {
            browser: self,
            session,
        };
        page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": false}),
        )
        .await?;
        page.call("Page.enable", json!({})).await?;
        Ok(page)
    }

    /// Closes Chromium.
    pub async fn close(mut self) {
        let _ = self.call("Browser.close", json!({}), None).await;
        let _ = tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await;
        let _ = self.child.kill().await;
        self.reader.abort();
    }
}

/// One tab.
pub struct Page<'a> {
    browser: &'a Browser,
    session: String,
}

impl Page<'_> {
    /// Sends `method` to this tab.
    pub async fn call(&self, method: &str, params: Value) -> anyhow::Result<Value> {
        self.browser.call(method, params, Some(&self.session)).await
    }

    /// Evaluates `expression` (awaiting a promise) and returns its value.
    pub async fn eval(&self, expression: &str) -> anyhow::Result<Value> {
        let reply = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true, "awaitPromise": true}),
            )
            .await?;
        if let Some(exception) = reply.get("exceptionDetails") {
            bail!("{expression}: {exception}");
        }
        Ok(reply["result"].get("value").cloned().unwrap_or(Value::Null))
    }

    /// Polls `expression` every 100 ms until it is `true` (errors count as not yet, e.g. while
    /// a new document loads), up to `timeout`; returns how long it took.
    pub async fn wait_until(
        &self,
        expression: &str,
        timeout: Duration,
    ) -> anyhow::Result<Duration> {
        let start = Instant::now();
        loop {
            if let Ok(Value::Bool(true)) = self.eval(expression).await {
                return Ok(start.elapsed());
            }
            if start.elapsed() > timeout {
                let text = self.text().await.unwrap_or_default();
                bail!(
                    "not true within {timeout:?}: {expression}\npage text:\n{}",
                    text.chars().take(3000).collect::<String>()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Runs `action` (JavaScript that starts a navigation: a link or button click, a
    /// `location` change) and waits until the new document has loaded.
    pub async fn navigating(&self, action: &str) -> anyhow::Result<()> {
        self.eval(&format!("window.__ocmLeaving = true; {action}; true"))
            .await?;
        self.wait_until(
            "window.__ocmLeaving === undefined && document.readyState === 'complete'",
            Duration::from_secs(20),
        )
        .await?;
        Ok(())
    }

    /// Opens `url` and waits until it has loaded.
    pub async fn goto(&self, url: &str) -> anyhow::Result<()> {
        self.navigating(&format!("window.location.href = {}", json!(url)))
            .await
    }

    /// The page's visible text.
    pub async fn text(&self) -> anyhow::Result<String> {
        Ok(self
            .eval("document.body ? document.body.innerText : ''")
            .await?
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }

    /// Writes a PNG of the whole page to `path`.
    pub async fn screenshot(&self, path: &Path) -> anyhow::Result<()> {
        let shot = self
            .call(
                "Page.captureScreenshot",
                json!({"format": "png", "captureBeyondViewport": false}),
            )
            .await?;
        let data = shot["data"].as_str().context("screenshot data")?;
        let png = base64::engine::general_purpose::STANDARD.decode(data)?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, png).with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }
}
