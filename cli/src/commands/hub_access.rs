//! How a command finds the hub it talks to, in this order:
//!
//! 1. `--kubeconfig FILE`;
//! 2. `$KUBECONFIG`, as kubectl reads it: a list of files separated by `:` (`;` on Windows),
//!    of which the missing ones are skipped and the others merged — for each cluster, user
//!    and context name the first file that defines it wins, and the current context is the
//!    first file's that sets one (kube's `Kubeconfig::merge`, kubectl's rules);
//! 3. the hub started last on this machine: `ocm hub` (embedded, or on a cluster with
//!    `--kubeconfig`), `ocm demo` and `ocm demo --operator` each write the path of their
//!    admin kubeconfig into `$OCM_HOME/current-hub` once their API server serves;
//! 4. if that record is missing or names a file that is gone, the newest of the admin
//!    kubeconfigs those commands write into their default data directories.
//!
//! Every command that connects says on stderr which hub it reached, so that stdout stays
//! what scripts parse.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Context;
use clap::Args;
use kube::config::Kubeconfig;

/// The file in `$OCM_HOME` that names the admin kubeconfig of the hub started last.
pub const CURRENT_HUB_FILE: &str = "current-hub";
/// Default data directory of `ocm hub`'s embedded server, under `$OCM_HOME`.
pub const HUB_DIR: &str = "hub";
/// Default data directory of `ocm demo`, under `$OCM_HOME`.
pub const DEMO_DIR: &str = "demo";
/// Default data directory of `ocm demo --operator`, under `$OCM_HOME`.
pub const OPERATOR_DEMO_DIR: &str = "demo-operator";
/// Where `ocm demo --operator` keeps its hub cluster, under its data directory.
pub const OPERATOR_DEMO_HUB_DIR: &str = "hub";
const ADMIN_KUBECONFIG: &str = "admin.kubeconfig";

/// Where `ocm` keeps its state by default: `$OCM_HOME`, else `~/.ocm`.
pub fn ocm_home() -> PathBuf {
    if let Some(home) = std::env::var_os("OCM_HOME") {
        return PathBuf::from(home);
    }
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".ocm")
}

/// The `--kubeconfig` flag of commands that talk to the hub.
#[derive(Debug, Clone, Args)]
pub struct HubAccess {
    /// Kubeconfig of the hub (default: $KUBECONFIG, else the hub that `ocm hub`, `ocm demo`
    /// or `ocm demo --operator` started last).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}

/// A hub a command is connected to.
pub struct Hub {
    /// Its client.
    pub client: kube::Client,
    /// The kubeconfig the client was built from (merged when `$KUBECONFIG` lists several).
    pub kubeconfig: Kubeconfig,
    /// The files it was read from.
    pub files: Vec<PathBuf>,
}

impl HubAccess {
    /// Connects to the hub and says which on stderr (`hub: FILE (URL)`).
    pub async fn connect(&self) -> anyhow::Result<Hub> {
        let found = find_hub(
            &HubLookup {
                flag: self.kubeconfig.as_deref(),
                kubeconfig_env: std::env::var_os("KUBECONFIG").as_deref(),
                home: &ocm_home(),
            },
            &RealDisk,
        )?;
        let kubeconfig = read_merged(&found.files)?;
        let server = ocm_runtime::kubeconfig::current_server(&kubeconfig)
            .with_context(|| format!("in {}", describe_files(&found.files)))?;
        eprintln!("hub: {} ({})", describe_files(&found.files), server.server);
        let client = ocm_runtime::kubeconfig::client_from_kubeconfig(kubeconfig.clone())
            .await
            .with_context(|| format!("loading {}", describe_files(&found.files)))?;
        Ok(Hub {
            client,
            kubeconfig,
            files: found.files,
        })
    }

    /// A client of the hub (see [`HubAccess::connect`]).
    pub async fn client(&self) -> anyhow::Result<kube::Client> {
        Ok(self.connect().await?.client)
    }
}

impl Hub {
    /// The namespace the kubeconfig's current context names, if any (kubectl's default for
    /// namespaced commands).
    pub fn context_namespace(&self) -> Option<String> {
        let name = self.kubeconfig.current_context.as_ref()?;
        self.kubeconfig
            .contexts
            .iter()
            .find(|c| &c.name == name)
            .and_then(|c| c.context.as_ref())
            .and_then(|c| c.namespace.clone())
    }

    /// The one kubeconfig file, for what reads a file itself (`ocm proxy`); refused when
    /// `$KUBECONFIG` merged several.
    pub fn single_file(&self) -> anyhow::Result<&Path> {
        match self.files.as_slice() {
            [one] => Ok(one),
            files => anyhow::bail!(
                "this command reads one kubeconfig file, but $KUBECONFIG lists {} ({}); \
                 pass --kubeconfig FILE",
                files.len(),
                describe_files(files)
            ),
        }
    }
}

/// A client from one kubeconfig file, with an error that says how to get one if it is missing.
pub(crate) async fn client_from(path: &Path) -> anyhow::Result<kube::Client> {
    if !path.exists() {
        anyhow::bail!(
            "kubeconfig {} does not exist (start a hub with `ocm hub`, or pass --kubeconfig)",
            path.display()
        );
    }
    ocm_runtime::kubeconfig::client_from_file(path)
        .await
        .with_context(|| format!("loading {}", path.display()))
}

/// Records `admin_kubeconfig` as the hub started last (`$OCM_HOME/current-hub`), for the
/// commands run after it. A failure only warns: the hub itself runs on.
pub fn record_current_hub(admin_kubeconfig: &Path) {
    if let Err(err) = write_current_hub(&ocm_home(), admin_kubeconfig) {
        eprintln!("warning: could not record the current hub: {err:#}");
    }
}

fn write_current_hub(home: &Path, admin_kubeconfig: &Path) -> anyhow::Result<()> {
    let path = std::path::absolute(admin_kubeconfig)
        .with_context(|| format!("resolving {}", admin_kubeconfig.display()))?;
    std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
    let record = home.join(CURRENT_HUB_FILE);
    // Written aside and renamed: a command started meanwhile reads the old or the new record.
    let partial = home.join(format!("{CURRENT_HUB_FILE}.{}.tmp", std::process::id()));
    std::fs::write(&partial, format!("{}\n", path.display()))
        .with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, &record).with_context(|| format!("writing {}", record.display()))
}

/// What hub lookup is given: the flag, `$KUBECONFIG` and the `ocm` home.
#[derive(Debug, Clone, Copy)]
pub struct HubLookup<'a> {
    /// `--kubeconfig`.
    pub flag: Option<&'a Path>,
    /// The value of `$KUBECONFIG`.
    pub kubeconfig_env: Option<&'a OsStr>,
    /// `$OCM_HOME` (or `~/.ocm`).
    pub home: &'a Path,
}

/// What hub lookup reads of the file system (a trait so that tests can make one up).
pub trait Disk {
    /// When the file was last written; `None` when it does not exist.
    fn modified(&self, path: &Path) -> Option<SystemTime>;
    /// The file's text; `None` when it cannot be read.
    fn read_to_string(&self, path: &Path) -> Option<String>;
}

/// The real file system.
#[derive(Debug, Clone, Copy)]
pub struct RealDisk;

impl Disk for RealDisk {
    fn modified(&self, path: &Path) -> Option<SystemTime> {
        let metadata = std::fs::metadata(path).ok()?;
        Some(metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH))
    }

    fn read_to_string(&self, path: &Path) -> Option<String> {
        std::fs::read_to_string(path).ok()
    }
}

/// Which rule chose the hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HubSource {
    /// `--kubeconfig`.
    Flag,
    /// `$KUBECONFIG`.
    KubeconfigEnv,
    /// `$OCM_HOME/current-hub`.
    CurrentHub,
    /// The newest admin kubeconfig in a default data directory.
    NewestDefault,
}

/// The kubeconfig files of the hub found (several only from `$KUBECONFIG`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundHub {
    /// The files, in merge order.
    pub files: Vec<PathBuf>,
    /// Which rule chose them.
    pub source: HubSource,
}

/// An admin kubeconfig that a hub-starting command writes in its default data directory.
struct DefaultHub {
    kubeconfig: PathBuf,
    command: &'static str,
}

fn default_hubs(home: &Path) -> [DefaultHub; 3] {
    [
        DefaultHub {
            kubeconfig: home.join(HUB_DIR).join(ADMIN_KUBECONFIG),
            command: "ocm hub",
        },
        DefaultHub {
            kubeconfig: home.join(DEMO_DIR).join(ADMIN_KUBECONFIG),
            command: "ocm demo",
        },
        DefaultHub {
            kubeconfig: home
                .join(OPERATOR_DEMO_DIR)
                .join(OPERATOR_DEMO_HUB_DIR)
                .join(ADMIN_KUBECONFIG),
            command: "ocm demo --operator",
        },
    ]
}

/// Finds the hub's kubeconfig files by the rules in this module's documentation.
pub fn find_hub(lookup: &HubLookup<'_>, disk: &impl Disk) -> anyhow::Result<FoundHub> {
    if let Some(flag) = lookup.flag {
        if disk.modified(flag).is_none() {
            anyhow::bail!(
                "kubeconfig {} (--kubeconfig) does not exist",
                flag.display()
            );
        }
        return Ok(FoundHub {
            files: vec![flag.to_path_buf()],
            source: HubSource::Flag,
        });
    }
    let listed = kubeconfig_env_files(lookup.kubeconfig_env);
    if !listed.is_empty() {
        let files: Vec<PathBuf> = listed
            .iter()
            .filter(|f| disk.modified(f).is_some())
            .cloned()
            .collect();
        if files.is_empty() {
            anyhow::bail!(
                "no file that $KUBECONFIG lists exists: {} (unset KUBECONFIG to use the hub \
                 `ocm` started last, or pass --kubeconfig FILE)",
                describe_files(&listed)
            );
        }
        return Ok(FoundHub {
            files,
            source: HubSource::KubeconfigEnv,
        });
    }
    let record = lookup.home.join(CURRENT_HUB_FILE);
    let recorded = disk
        .read_to_string(&record)
        .map(|text| PathBuf::from(text.trim()))
        .filter(|p| !p.as_os_str().is_empty());
    if let Some(path) = &recorded
        && disk.modified(path).is_some()
    {
        return Ok(FoundHub {
            files: vec![path.clone()],
            source: HubSource::CurrentHub,
        });
    }
    let defaults = default_hubs(lookup.home);
    let newest = defaults
        .iter()
        .filter_map(|d| disk.modified(&d.kubeconfig).map(|t| (t, d)))
        .max_by_key(|(t, _)| *t);
    if let Some((_, hub)) = newest {
        return Ok(FoundHub {
            files: vec![hub.kubeconfig.clone()],
            source: HubSource::NewestDefault,
        });
    }
    Err(no_hub_error(&record, recorded.as_deref(), &defaults))
}

/// The files `$KUBECONFIG` lists, empty entries skipped (an empty value counts as unset, as
/// for kubectl).
fn kubeconfig_env_files(value: Option<&OsStr>) -> Vec<PathBuf> {
    value
        .map(|v| {
            std::env::split_paths(v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default()
}

fn no_hub_error(record: &Path, recorded: Option<&Path>, defaults: &[DefaultHub]) -> anyhow::Error {
    let mut text = String::from("no hub found. Looked at:\n");
    text.push_str("  --kubeconfig: not given\n");
    text.push_str("  $KUBECONFIG: not set\n");
    match recorded {
        Some(path) => text.push_str(&format!(
            "  {} (the hub started last): names {}, which does not exist\n",
            record.display(),
            path.display()
        )),
        None => text.push_str(&format!(
            "  {} (the hub started last): none recorded\n",
            record.display()
        )),
    }
    for hub in defaults {
        text.push_str(&format!(
            "  {} (`{}`): does not exist\n",
            hub.kubeconfig.display(),
            hub.command
        ));
    }
    text.push_str(
        "Start a hub with `ocm hub` (or try `ocm demo`), or pass --kubeconfig FILE of an \
         existing one.",
    );
    anyhow::anyhow!(text)
}

/// Reads the files and merges them as kubectl does (see the module documentation).
fn read_merged(files: &[PathBuf]) -> anyhow::Result<Kubeconfig> {
    let mut merged: Option<Kubeconfig> = None;
    for file in files {
        let config = Kubeconfig::read_from(file)
            .with_context(|| format!("reading kubeconfig {}", file.display()))?;
        merged = Some(match merged {
            None => config,
            Some(earlier) => earlier
                .merge(config)
                .with_context(|| format!("merging kubeconfig {}", file.display()))?,
        });
    }
    merged.ok_or_else(|| anyhow::anyhow!("no kubeconfig file to read"))
}

/// The files as `$KUBECONFIG` would list them.
fn describe_files(files: &[PathBuf]) -> String {
    std::env::join_paths(files)
        .map(|joined| joined.to_string_lossy().into_owned())
        .unwrap_or_else(|_| {
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::time::Duration;

    /// Files with a modification time (seconds) and text.
    #[derive(Default)]
    struct FakeDisk(BTreeMap<PathBuf, (u64, String)>);

    impl FakeDisk {
        fn with(mut self, path: &str, second: u64, text: &str) -> Self {
            self.0
                .insert(PathBuf::from(path), (second, text.to_owned()));
            self
        }
    }

    impl Disk for FakeDisk {
        fn modified(&self, path: &Path) -> Option<SystemTime> {
            self.0
                .get(path)
                .map(|(s, _)| SystemTime::UNIX_EPOCH + Duration::from_secs(*s))
        }
        fn read_to_string(&self, path: &Path) -> Option<String> {
            self.0.get(path).map(|(_, t)| t.clone())
        }
    }

    fn lookup<'a>(flag: Option<&'a str>, env: Option<&'a str>) -> HubLookup<'a> {
        HubLookup {
            flag: flag.map(Path::new),
            kubeconfig_env: env.map(OsStr::new),
            home: Path::new("/h"),
        }
    }

    fn found(disk: &FakeDisk, flag: Option<&str>, env: Option<&str>) -> (Vec<String>, HubSource) {
        let hub = find_hub(&lookup(flag, env), disk).unwrap();
        let files = hub.files.iter().map(|f| f.display().to_string()).collect();
        (files, hub.source)
    }

    const HUB: &str = "/h/hub/admin.kubeconfig";
    const DEMO: &str = "/h/demo/admin.kubeconfig";
    const OPERATOR_DEMO: &str = "/h/demo-operator/hub/admin.kubeconfig";

    #[test]
    fn the_flag_wins_then_kubeconfig_then_the_recorded_hub() {
        let disk = FakeDisk::default()
            .with("/k/flag", 1, "")
            .with("/k/env", 1, "")
            .with("/h/current-hub", 1, &format!("{DEMO}\n"))
            .with(DEMO, 1, "")
            .with(HUB, 2, "");
        assert_eq!(
            found(&disk, Some("/k/flag"), Some("/k/env")),
            (vec!["/k/flag".into()], HubSource::Flag)
        );
        assert_eq!(
            found(&disk, None, Some("/k/env")),
            (vec!["/k/env".into()], HubSource::KubeconfigEnv)
        );
        assert_eq!(
            found(&disk, None, None),
            (vec![DEMO.into()], HubSource::CurrentHub)
        );
        assert_eq!(
            found(&disk, None, Some("")),
            (vec![DEMO.into()], HubSource::CurrentHub),
            "an empty KUBECONFIG counts as unset"
        );
    }

    #[test]
    fn kubeconfig_lists_keep_their_existing_files_in_order() {
        let disk = FakeDisk::default().with("/k/b", 1, "").with("/k/c", 1, "");
        assert_eq!(
            found(&disk, None, Some("/k/a::/k/b:/k/c")),
            (vec!["/k/b".into(), "/k/c".into()], HubSource::KubeconfigEnv)
        );
        let err = find_hub(&lookup(None, Some("/k/a:/k/z")), &disk).unwrap_err();
        assert!(err.to_string().contains("/k/a:/k/z"), "{err}");
        let err = find_hub(&lookup(Some("/k/missing"), None), &disk).unwrap_err();
        assert!(
            err.to_string().contains("/k/missing (--kubeconfig)"),
            "{err}"
        );
    }

    #[test]
    fn without_a_usable_record_the_newest_default_hub_is_used() {
        let disk = FakeDisk::default()
            .with("/h/current-hub", 5, "/gone/admin.kubeconfig\n")
            .with(HUB, 1, "")
            .with(OPERATOR_DEMO, 3, "")
            .with(DEMO, 2, "");
        assert_eq!(
            found(&disk, None, None),
            (vec![OPERATOR_DEMO.into()], HubSource::NewestDefault)
        );
        let disk = FakeDisk::default().with(HUB, 1, "");
        assert_eq!(
            found(&disk, None, None),
            (vec![HUB.into()], HubSource::NewestDefault)
        );
    }

    #[test]
    fn no_hub_names_every_place_looked_at() {
        let disk = FakeDisk::default().with("/h/current-hub", 5, "/gone/admin.kubeconfig\n");
        let err = find_hub(&lookup(None, None), &disk)
            .unwrap_err()
            .to_string();
        for needle in [
            "--kubeconfig",
            "$KUBECONFIG",
            "/h/current-hub (the hub started last): names /gone/admin.kubeconfig",
            HUB,
            DEMO,
            OPERATOR_DEMO,
            "`ocm hub`",
            "`ocm demo`",
        ] {
            assert!(err.contains(needle), "{needle:?} missing from:\n{err}");
        }
    }

    #[test]
    fn the_record_names_an_absolute_path_and_is_read_back() {
        let home = tempfile::tempdir().unwrap();
        let kubeconfig = home.path().join("elsewhere").join("admin.kubeconfig");
        std::fs::create_dir_all(kubeconfig.parent().unwrap()).unwrap();
        std::fs::write(&kubeconfig, "").unwrap();
        write_current_hub(home.path(), &kubeconfig).unwrap();
        let hub = find_hub(
            &HubLookup {
                flag: None,
                kubeconfig_env: None,
                home: home.path(),
            },
            &RealDisk,
        )
        .unwrap();
        assert_eq!(hub.files, vec![kubeconfig]);
        assert_eq!(hub.source, HubSource::CurrentHub);
    }

    #[test]
    fn kubeconfig_files_merge_first_one_wins() {
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, current: Option<&str>, context: &str, namespace: &str| {
            let current = current
                .map(|c| format!("current-context: {c}\n"))
                .unwrap_or_default();
            let text = format!(
                "apiVersion: v1\nkind: Config\n{current}clusters:\n- name: {context}\n  cluster:\n    server: https://{context}:6443\ncontexts:\n- name: {context}\n  context:\n    cluster: {context}\n    user: u\n    namespace: {namespace}\nusers:\n- name: u\n  user:\n    token: t\n"
            );
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let a = file("a", None, "a", "na");
        let b = file("b", Some("b"), "b", "nb");
        let c = file("c", Some("a"), "a", "nc");
        let merged = read_merged(&[a, b, c]).unwrap();
        assert_eq!(merged.current_context.as_deref(), Some("b"));
        let server = ocm_runtime::kubeconfig::current_server(&merged).unwrap();
        assert_eq!(server.server, "https://b:6443");
        let context_a = merged.contexts.iter().find(|c| c.name == "a").unwrap();
        assert_eq!(
            context_a.context.as_ref().unwrap().namespace.as_deref(),
            Some("na"),
            "the first file that names a context wins"
        );
    }
}
