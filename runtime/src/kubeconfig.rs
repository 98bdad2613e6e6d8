//! Kubeconfig files: parse them, build `kube` clients from them, and render new ones (the
//! agent writes the hub kubeconfig it earned; `ocm` writes admin and bootstrap kubeconfigs).

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Errors reading a kubeconfig or building a client from it.
#[derive(Debug, thiserror::Error)]
pub enum KubeconfigError {
    /// The text is not a kubeconfig.
    #[error("not a valid kubeconfig: {0}")]
    Parse(String),
    /// The file could not be read.
    #[error("reading kubeconfig {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The kubeconfig has no usable current context / cluster / server.
    #[error("kubeconfig is incomplete: {0}")]
    Incomplete(String),
    /// The kubeconfig is well formed but no client can be built from it.
    #[error("cannot build a client from the kubeconfig: {0}")]
    Client(String),
}

/// The cluster half of a kubeconfig: where the server is and how to trust it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerInfo {
    /// `https://host:port` of the API server.
    pub server: String,
    /// PEM bundle of the CA that signed the serving certificate, if not the system roots.
    pub ca_pem: Option<String>,
    /// HTTP(S) proxy to reach the server through.
    pub proxy_url: Option<String>,
}

/// How a kubeconfig user authenticates.
#[derive(Clone, PartialEq, Eq)]
pub enum KubeconfigAuth {
    /// A bearer token.
    Token(String),
    /// A client certificate and key, inline.
    ClientCertData {
        /// PEM certificate (chain).
        cert_pem: String,
        /// PEM private key.
        key_pem: String,
    },
    /// A bearer token in a file (`tokenFile`), read again as it changes (kube's clients
    /// re-read it about every minute): how a kubelet's rotated ServiceAccount tokens reach a
    /// process.
    TokenFile(String),
    /// A client certificate and key in files next to the kubeconfig (paths as written).
    ClientCertFiles {
        /// Path of the PEM certificate.
        cert_path: String,
        /// Path of the PEM private key.
        key_path: String,
    },
}

impl std::fmt::Debug for KubeconfigAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KubeconfigAuth::Token(_) => f.write_str("Token(..)"),
            KubeconfigAuth::TokenFile(path) => write!(f, "TokenFile({path})"),
            KubeconfigAuth::ClientCertData { .. } => f.write_str("ClientCertData(..)"),
            KubeconfigAuth::ClientCertFiles {
                cert_path,
                key_path,
            } => write!(f, "ClientCertFiles({cert_path}, {key_path})"),
        }
    }
}

/// Everything needed to render a single-context kubeconfig.
#[derive(Clone, Debug)]
pub struct KubeconfigSpec {
    /// Cluster half.
    pub server: ServerInfo,
    /// User half.
    pub auth: KubeconfigAuth,
    /// Name of the cluster, context and user entries' context.
    pub context: String,
    /// Name of the user entry.
    pub user: String,
    /// Default namespace of the context.
    pub namespace: Option<String>,
}

/// Parses kubeconfig YAML (or JSON).
pub fn parse(yaml: &str) -> Result<Kubeconfig, KubeconfigError> {
    if yaml.trim().is_empty() {
        return Err(KubeconfigError::Parse("empty document".into()));
    }
    let config = Kubeconfig::from_yaml(yaml).map_err(|e| KubeconfigError::Parse(e.to_string()))?;
    current_server(&config)?;
    Ok(config)
}

/// The cluster of the current context.
pub fn current_server(config: &Kubeconfig) -> Result<ServerInfo, KubeconfigError> {
    let context_name = config
        .current_context
        .clone()
        .or_else(|| config.contexts.first().map(|c| c.name.clone()))
        .ok_or_else(|| KubeconfigError::Incomplete("no current context".into()))?;
    let context = config
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| {
            KubeconfigError::Incomplete(format!("context {context_name:?} not found"))
        })?;
    let cluster = config
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| {
            KubeconfigError::Incomplete(format!("cluster {:?} not found", context.cluster))
        })?;
    let server = cluster
        .server
        .clone()
        .filter(|s| !s.is_empty())
        .ok_or_else(|| KubeconfigError::Incomplete("cluster has no server URL".into()))?;
    server
        .parse::<http::Uri>()
        .map_err(|e| KubeconfigError::Incomplete(format!("server URL {server:?}: {e}")))?;
    let ca_pem = match (
        &cluster.certificate_authority_data,
        &cluster.certificate_authority,
    ) {
        (Some(data), _) => Some(decode_base64_text(data, "certificate-authority-data")?),
        (None, Some(path)) => {
            Some(
                std::fs::read_to_string(path).map_err(|e| KubeconfigError::Read {
                    path: path.clone(),
                    message: e.to_string(),
                })?,
            )
        }
        (None, None) => None,
    };
    Ok(ServerInfo {
        server,
        ca_pem,
        proxy_url: cluster.proxy_url.clone(),
    })
}

/// The current context's user entry, as JSON (secret fields in plain text), if any.
fn current_auth_json(config: &Kubeconfig) -> Option<serde_json::Value> {
    let context_name = config
        .current_context
        .clone()
        .or_else(|| config.contexts.first().map(|c| c.name.clone()))?;
    let context = config
        .contexts
        .iter()
        .find(|c| c.name == context_name)?
        .context
        .as_ref()?;
    let user = context.user.as_deref()?;
    let auth = config
        .auth_infos
        .iter()
        .find(|a| a.name == user)?
        .auth_info
        .as_ref()?;
    // Secret fields are secrecy strings; their serde form is the plain text.
    serde_json::to_value(auth).ok()
}

/// The bearer token of the current context's user, if it authenticates with one.
pub fn current_token(config: &Kubeconfig) -> Option<String> {
    current_auth_json(config)?
        .get("token")?
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// How the current context's user proves who it is: a bearer token or a client certificate.
#[derive(Clone, PartialEq, Eq)]
pub enum UserCredentials {
    /// A bearer token.
    Token(String),
    /// A client certificate and its key, PEM.
    ClientCertificate {
        /// Certificate chain, PEM.
        cert_pem: String,
        /// Private key, PEM.
        key_pem: String,
    },
}

impl std::fmt::Debug for UserCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UserCredentials::Token(_) => f.write_str("Token(..)"),
            UserCredentials::ClientCertificate { .. } => f.write_str("ClientCertificate(..)"),
        }
    }
}

/// The current context user's token (`token`, `tokenFile`) or client certificate (inline or
/// in files, relative paths taken from `base_dir`). Users that authenticate through an exec
/// plugin or an auth provider have neither and are refused.
pub fn current_credentials(
    config: &Kubeconfig,
    base_dir: &Path,
) -> Result<UserCredentials, KubeconfigError> {
    let auth = current_auth_json(config)
        .ok_or_else(|| KubeconfigError::Incomplete("no user in the current context".into()))?;
    let text = |key: &str| {
        auth.get(key)
            .and_then(|v| v.as_str())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let read = |path: String| {
        let path = base_dir.join(path);
        std::fs::read_to_string(&path).map_err(|e| KubeconfigError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    };
    if let Some(token) = text("token") {
        return Ok(UserCredentials::Token(token));
    }
    if let Some(file) = text("tokenFile") {
        return Ok(UserCredentials::Token(read(file)?.trim().to_owned()));
    }
    let cert = match (text("client-certificate-data"), text("client-certificate")) {
        (Some(data), _) => Some(decode_base64_text(&data, "client-certificate-data")?),
        (None, Some(path)) => Some(read(path)?),
        (None, None) => None,
    };
    let key = match (text("client-key-data"), text("client-key")) {
        (Some(data), _) => Some(decode_base64_text(&data, "client-key-data")?),
        (None, Some(path)) => Some(read(path)?),
        (None, None) => None,
    };
    match (cert, key) {
        (Some(cert_pem), Some(key_pem)) => {
            Ok(UserCredentials::ClientCertificate { cert_pem, key_pem })
        }
        _ => Err(KubeconfigError::Incomplete(
            "the current user has no token and no client certificate with its key \
             (users of exec plugins and auth providers cannot be passed on)"
                .into(),
        )),
    }
}

fn decode_base64_text(data: &str, field: &str) -> Result<String, KubeconfigError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| KubeconfigError::Parse(format!("{field} is not base64: {e}")))?;
    String::from_utf8(bytes).map_err(|_| KubeconfigError::Parse(format!("{field} is not PEM text")))
}

/// Renders a single-context kubeconfig as YAML.
pub fn render(spec: &KubeconfigSpec) -> String {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
    let mut cluster = serde_json::Map::new();
    if let Some(ca) = &spec.server.ca_pem {
        cluster.insert("certificate-authority-data".into(), b64(ca).into());
    }
    if let Some(proxy) = &spec.server.proxy_url {
        cluster.insert("proxy-url".into(), proxy.clone().into());
    }
    cluster.insert("server".into(), spec.server.server.clone().into());
    let mut user = serde_json::Map::new();
    match &spec.auth {
        KubeconfigAuth::Token(token) => {
            user.insert("token".into(), token.clone().into());
        }
        KubeconfigAuth::TokenFile(path) => {
            user.insert("tokenFile".into(), path.clone().into());
        }
        KubeconfigAuth::ClientCertData { cert_pem, key_pem } => {
            user.insert("client-certificate-data".into(), b64(cert_pem).into());
            user.insert("client-key-data".into(), b64(key_pem).into());
        }
        KubeconfigAuth::ClientCertFiles {
            cert_path,
            key_path,
        } => {
            user.insert("client-certificate".into(), cert_path.clone().into());
            user.insert("client-key".into(), key_path.clone().into());
        }
    }
    let mut context = serde_json::Map::new();
    context.insert("cluster".into(), spec.context.clone().into());
    if let Some(ns) = &spec.namespace {
        context.insert("namespace".into(), ns.clone().into());
    }
    context.insert("user".into(), spec.user.clone().into());
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": spec.context, "cluster": cluster}],
        "contexts": [{"name": spec.context, "context": context}],
        "current-context": spec.context,
        "preferences": {},
        "users": [{"name": spec.user, "user": user}],
    });
    serde_saphyr::to_string(&doc).unwrap_or_else(|_| doc.to_string())
}

/// A client for `server` authenticating with `auth` (file paths are read now).
pub async fn client_for(
    server: &ServerInfo,
    auth: &KubeconfigAuth,
) -> Result<kube::Client, KubeconfigError> {
    client_from_yaml(&render_for(server, auth)?).await
}

/// One client shared by the agents of one cluster that authenticate alike — the registration
/// and work agents of one `ocm agent` process both use the certificate in the hub kubeconfig
/// secret — so they hold one connection to the hub instead of one each. It keeps the client of
/// the latest credentials only: an agent asking with other credentials (a rotated certificate)
/// gets a new client, and the old one closes when its last user lets go of it.
#[derive(Clone, Default)]
pub struct SharedClient {
    /// The rendered kubeconfig the client was built from, and the client.
    slot: std::sync::Arc<tokio::sync::Mutex<Option<(String, kube::Client)>>>,
}

impl SharedClient {
    /// A new, empty slot.
    pub fn new() -> SharedClient {
        SharedClient::default()
    }

    /// The shared client when it was built for the same server and credentials, else a new
    /// one (which replaces it).
    pub async fn client_for(
        &self,
        server: &ServerInfo,
        auth: &KubeconfigAuth,
    ) -> Result<kube::Client, KubeconfigError> {
        let yaml = render_for(server, auth)?;
        let mut slot = self.slot.lock().await;
        if let Some((built_from, client)) = slot.as_ref()
            && *built_from == yaml
        {
            return Ok(client.clone());
        }
        let client = client_from_yaml(&yaml).await?;
        *slot = Some((yaml, client.clone()));
        Ok(client)
    }
}

impl std::fmt::Debug for SharedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedClient(..)")
    }
}

/// The kubeconfig text of a client for `server` authenticating with `auth`, files read now.
fn render_for(server: &ServerInfo, auth: &KubeconfigAuth) -> Result<String, KubeconfigError> {
    let auth = match auth {
        KubeconfigAuth::ClientCertFiles {
            cert_path,
            key_path,
        } => KubeconfigAuth::ClientCertData {
            cert_pem: read(Path::new(cert_path))?,
            key_pem: read(Path::new(key_path))?,
        },
        other => other.clone(),
    };
    Ok(render(&KubeconfigSpec {
        server: server.clone(),
        auth,
        context: "default".into(),
        user: "default".into(),
        namespace: None,
    }))
}

/// What a kubeconfig taken from a Secret may not hold: anything that would run a command or
/// read a file of the process that uses it (`exec`, `auth-provider`, `tokenFile`, certificate,
/// key and CA file paths). `None` when it holds only inline credentials.
pub fn untrusted_features(config: &Kubeconfig) -> Option<String> {
    for named in &config.auth_infos {
        let Some(user) = &named.auth_info else {
            continue;
        };
        let found = [
            ("exec", user.exec.is_some()),
            ("auth-provider", user.auth_provider.is_some()),
            ("tokenFile", user.token_file.is_some()),
            ("client-certificate", user.client_certificate.is_some()),
            ("client-key", user.client_key.is_some()),
        ];
        if let Some((field, _)) = found.iter().find(|(_, present)| *present) {
            return Some(format!("user {:?} uses {field}", named.name));
        }
    }
    for named in &config.clusters {
        if named
            .cluster
            .as_ref()
            .is_some_and(|c| c.certificate_authority.is_some())
        {
            return Some(format!(
                "cluster {:?} uses certificate-authority (a file)",
                named.name
            ));
        }
    }
    None
}

/// A client from kubeconfig text someone else wrote (a Secret's): refused when it would run a
/// command or read a local file ([`untrusted_features`]).
pub async fn client_from_untrusted_yaml(yaml: &str) -> Result<kube::Client, KubeconfigError> {
    let config = parse(yaml)?;
    if let Some(feature) = untrusted_features(&config) {
        return Err(KubeconfigError::Parse(format!(
            "{feature}; only inline credentials are accepted here"
        )));
    }
    client_from_kubeconfig(config).await
}

/// A client from kubeconfig text.
pub async fn client_from_yaml(yaml: &str) -> Result<kube::Client, KubeconfigError> {
    client_from_kubeconfig(parse(yaml)?).await
}

/// A client from a kubeconfig file (relative paths inside resolve against its folder).
pub async fn client_from_file(path: &Path) -> Result<kube::Client, KubeconfigError> {
    let config = Kubeconfig::read_from(path).map_err(|e| KubeconfigError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    current_server(&config)?;
    client_from_kubeconfig(config).await
}

/// A client from a parsed kubeconfig.
pub async fn client_from_kubeconfig(config: Kubeconfig) -> Result<kube::Client, KubeconfigError> {
    let mut config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .map_err(|e| KubeconfigError::Client(e.to_string()))?;
    config.connect_timeout = Some(Duration::from_secs(10));
    crate::client::build(config).map_err(|e| KubeconfigError::Client(e.to_string()))
}

/// A client from a kubeconfig file that speaks only HTTP/1.1 (kube's own client): the one
/// for upgrade requests (exec, attach, port-forward), which HTTP/2 cannot carry.
pub async fn http1_client_from_file(path: &Path) -> Result<kube::Client, KubeconfigError> {
    let config = Kubeconfig::read_from(path).map_err(|e| KubeconfigError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    current_server(&config)?;
    let mut config = kube::Config::from_custom_kubeconfig(config, &KubeConfigOptions::default())
        .await
        .map_err(|e| KubeconfigError::Client(e.to_string()))?;
    config.connect_timeout = Some(Duration::from_secs(10));
    kube::Client::try_from(config).map_err(|e| KubeconfigError::Client(e.to_string()))
}

fn read(path: &Path) -> Result<String, KubeconfigError> {
    std::fs::read_to_string(path).map_err(|e| KubeconfigError::Read {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod untrusted_tests {
    use super::*;

    #[test]
    fn commands_and_files_are_refused_inline_credentials_pass() {
        let with = |user: &str| {
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: h\n  cluster:\n    server: https://h:6443\ncontexts:\n- name: c\n  context:\n    cluster: h\n    user: u\nusers:\n- name: u\n  user:\n{user}\n"
            )
        };
        let inline = parse(&with("    token: abc")).unwrap();
        assert_eq!(untrusted_features(&inline), None);
        let exec = parse(&with(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: sh",
        ))
        .unwrap();
        assert!(untrusted_features(&exec).unwrap().contains("exec"));
        let file = parse(&with("    tokenFile: /var/run/secrets/token")).unwrap();
        assert!(untrusted_features(&file).unwrap().contains("tokenFile"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(auth: KubeconfigAuth) -> KubeconfigSpec {
        KubeconfigSpec {
            server: ServerInfo {
                server: "https://127.0.0.1:6443".into(),
                ca_pem: Some(
                    "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".into(),
                ),
                proxy_url: None,
            },
            auth,
            context: "default-context".into(),
            user: "default-auth".into(),
            namespace: Some("configuration".into()),
        }
    }

    #[test]
    fn rendered_kubeconfig_parses_back_to_the_same_server_and_token() {
        let yaml = render(&spec(KubeconfigAuth::Token(
            "abcdef.0123456789abcdef".into(),
        )));
        let parsed = parse(&yaml).unwrap();
        let server = current_server(&parsed).unwrap();
        assert_eq!(server, spec(KubeconfigAuth::Token(String::new())).server);
        assert_eq!(
            current_token(&parsed).as_deref(),
            Some("abcdef.0123456789abcdef")
        );
        assert_eq!(parsed.current_context.as_deref(), Some("default-context"));
    }

    #[test]
    fn file_references_are_written_as_paths() {
        let yaml = render(&spec(KubeconfigAuth::ClientCertFiles {
            cert_path: "tls.crt".into(),
            key_path: "tls.key".into(),
        }));
        assert!(yaml.contains("client-certificate: tls.crt"), "{yaml}");
        assert!(yaml.contains("client-key: tls.key"), "{yaml}");
        assert!(current_token(&parse(&yaml).unwrap()).is_none());
    }

    #[test]
    fn credentials_come_from_tokens_or_certificates_inline_or_in_files() {
        let dir = std::env::temp_dir().join(format!("ocm-creds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("token"), "file-token\n").unwrap();
        std::fs::write(dir.join("tls.key"), "KEY").unwrap();
        let token = parse(&render(&spec(KubeconfigAuth::Token("t1".into())))).unwrap();
        assert_eq!(
            current_credentials(&token, &dir).unwrap(),
            UserCredentials::Token("t1".into())
        );
        let with = |user: &str| {
            parse(&format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: h\n  cluster:\n    server: https://h:6443\ncontexts:\n- name: c\n  context:\n    cluster: h\n    user: u\nusers:\n- name: u\n  user:\n{user}\n"
            ))
            .unwrap()
        };
        assert_eq!(
            current_credentials(&with("    tokenFile: token"), &dir).unwrap(),
            UserCredentials::Token("file-token".into())
        );
        let cert = with("    client-certificate-data: Q0VSVA==\n    client-key: tls.key");
        assert_eq!(
            current_credentials(&cert, &dir).unwrap(),
            UserCredentials::ClientCertificate {
                cert_pem: "CERT".into(),
                key_pem: "KEY".into()
            }
        );
        let exec =
            with("    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: sh");
        let err = current_credentials(&exec, &dir).unwrap_err().to_string();
        assert!(err.contains("exec plugins"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn malformed_kubeconfigs_are_refused_with_a_reason() {
        for (text, needle) in [
            ("", "empty"),
            ("{{{{", "not a valid kubeconfig"),
            ("apiVersion: v1\nkind: Config\n", "no current context"),
            (
                "apiVersion: v1\nkind: Config\ncurrent-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {}}]\n",
                "no server URL",
            ),
        ] {
            let err = parse(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text:?}: {err}");
        }
    }
}
