//! Containers for the tests, through testcontainers: the project's own images, built here with
//! no registry (`docker/build-images.sh`), plus the `docker` calls testcontainers lacks.
//!
//! Where no Docker engine answers, every container test fails and says so, unless
//! `IDGEN_SKIP_DOCKER=1` skips them on purpose; a skipped test prints that it was skipped.

use std::process::Command;
use std::sync::OnceLock;

use testcontainers::bollard::models::{HostConfig, PortBinding};
pub use testcontainers::core::Mount;
use testcontainers::core::{ContainerPort, IntoContainerPort, WaitFor};
pub use testcontainers::runners::SyncRunner;
pub use testcontainers::{ContainerRequest, GenericImage, ImageExt};

/// Set to 1 to skip the container tests on purpose.
pub const SKIP_VAR: &str = "IDGEN_SKIP_DOCKER";

/// The module's image, as `docker/build-images.sh` tags it.
const REDIS_IMAGE: &str = "idgen/redis-idgen";
/// The ticket server's image.
const TICKET_IMAGE: &str = "idgen/ticket-server";
/// The tag both are built under.
const TAG: &str = "local";

/// Whether `test` should run: false, said on stderr, when skipped on purpose. Otherwise makes
/// sure a Docker engine answers and the images are built from this tree (once per test
/// binary), and panics with the reason when either fails.
pub fn docker_ready(test: &str) -> bool {
    if std::env::var(SKIP_VAR).is_ok_and(|v| !v.is_empty() && v != "0") {
        eprintln!("SKIPPED {test}: {SKIP_VAR} is set");
        return false;
    }
    static READY: OnceLock<Result<(), String>> = OnceLock::new();
    if let Err(why) = READY.get_or_init(|| engine_answers().and_then(|()| build_images())) {
        panic!("{why}");
    }
    true
}

fn engine_answers() -> Result<(), String> {
    let output = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .output();
    match output {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(String::from_utf8_lossy(&out.stderr).trim().to_string()),
        Err(e) => Err(format!("cannot run docker: {e}")),
    }
    .map_err(|why| {
        format!(
            "no Docker engine answers ({why}): the container tests need one; start it, or set \
             {SKIP_VAR}=1 to skip them on purpose"
        )
    })
}

/// Builds the images from the release artifacts `make test` has built, so the containers run
/// this tree's code; layers are cached, so a rebuild of unchanged artifacts is quick.
fn build_images() -> Result<(), String> {
    let script = idgen_tests::workspace_root().join("docker/build-images.sh");
    let output = Command::new(&script)
        .arg("--skip-build")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{} failed:\n{}{}",
        script.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// redis-server with the module; `args` replace the image's CMD (module load arguments, then
/// server options). Ready once Redis says so; 6379 is published on a loopback port.
pub fn redis_image(args: &[&str]) -> ContainerRequest<GenericImage> {
    GenericImage::new(REDIS_IMAGE, TAG)
        .with_exposed_port(REDIS_PORT.tcp())
        .with_wait_for(WaitFor::message_on_stdout("Ready to accept connections"))
        .with_cmd(args.iter().copied())
        .with_host_config_modifier(|config| publish_on_loopback(config, REDIS_PORT.tcp(), None))
}

/// A ticket server listening on 7001 with its data in `/data`; `args` replace the image's CMD
/// (`--offset`, `--increment`, ...). Ready once it logs so. 7001 is published on `host_port`
/// of loopback, or on a free one when `None`.
pub fn ticket_image(args: &[&str], host_port: Option<u16>) -> ContainerRequest<GenericImage> {
    GenericImage::new(TICKET_IMAGE, TAG)
        .with_exposed_port(TICKET_PORT.tcp())
        .with_wait_for(WaitFor::message_on_stderr("ticket server ready"))
        .with_cmd(args.iter().copied())
        .with_host_config_modifier(move |config| {
            publish_on_loopback(config, TICKET_PORT.tcp(), host_port)
        })
}

/// The port redis-server listens on in its image.
pub const REDIS_PORT: u16 = 6379;
/// The port the ticket server listens on in its image.
pub const TICKET_PORT: u16 = 7001;

/// Publishes `port` on 127.0.0.1 only (testcontainers binds every interface): the containers
/// run without passwords and `--protected-mode no`.
fn publish_on_loopback(config: &mut HostConfig, port: ContainerPort, host_port: Option<u16>) {
    let binding = PortBinding {
        host_ip: Some("127.0.0.1".to_string()),
        host_port: Some(host_port.map(|p| p.to_string()).unwrap_or_default()),
    };
    config.publish_all_ports = Some(false);
    config.port_bindings = Some([(port.to_string(), Some(vec![binding]))].into());
}

/// A name for a network or container that no other test run uses.
pub fn unique_name(what: &str) -> String {
    format!("idgen-test-{what}-{}", std::process::id())
}

/// Runs `docker args...`, for what testcontainers has no call for (`kill`); panics on failure.
pub fn docker(args: &[&str]) -> String {
    let output = Command::new("docker")
        .args(args)
        .output()
        .expect("run docker");
    assert!(
        output.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A `docker/compose.yml` project under its own name and host ports; `down -v` on drop.
pub struct Compose {
    project: String,
    /// `(variable, port)` for each published port of the compose file.
    ports: Vec<(&'static str, u16)>,
}

impl Compose {
    /// The project `name`, publishing each variable of `port_vars` on a free loopback port.
    pub fn new(name: &str, port_vars: &[&'static str]) -> Compose {
        let mut ports: Vec<(&'static str, u16)> = Vec::new();
        for var in port_vars {
            let port = loop {
                let port = idgen_tests::free_port();
                if ports.iter().all(|(_, p)| *p != port) {
                    break port;
                }
            };
            ports.push((var, port));
        }
        Compose {
            project: unique_name(name),
            ports,
        }
    }

    /// The compose project's name (volumes are `<project>_<volume>`).
    pub fn project(&self) -> &str {
        &self.project
    }

    /// The host port given to `var`.
    pub fn port(&self, var: &str) -> u16 {
        self.ports
            .iter()
            .find(|(v, _)| *v == var)
            .expect("a port variable")
            .1
    }

    /// Runs `docker compose` (the plugin where installed, else `docker-compose`) with `args`;
    /// panics with its output on failure.
    pub fn run(&self, args: &[&str]) -> String {
        let file = idgen_tests::workspace_root().join("docker/compose.yml");
        let plugin = Command::new("docker")
            .args(["compose", "version"])
            .output()
            .is_ok_and(|out| out.status.success());
        let mut command = if plugin {
            let mut c = Command::new("docker");
            c.arg("compose");
            c
        } else {
            Command::new("docker-compose")
        };
        command
            .arg("-f")
            .arg(&file)
            .args(["-p", &self.project])
            .args(args)
            .envs(self.ports.iter().map(|(v, p)| (*v, p.to_string())));
        let output = command.output().expect("run docker compose");
        assert!(
            output.status.success(),
            "compose {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).to_string()
    }
}

impl Drop for Compose {
    fn drop(&mut self) {
        self.run(&["down", "--volumes", "--remove-orphans"]);
    }
}
