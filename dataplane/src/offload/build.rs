//! Building the offload chain of a configuration: the shared state of a process's lcores,
//! the Tonic modules loaded from plugins, and each lcore's chain in AccelTCP §4's order.

use std::path::Path;
use std::sync::Arc;

use crate::buf::PacketBuf;
use crate::config::{OffloadConfig, TonicConfig};
use crate::tonic::module::TonicModule;
use crate::tonic::nic::{TonicNic, TonicNicConfig};
use crate::tonic::plugin::{self, PluginError};
use crate::tonic::registry::{params_from_config, Registry};

use super::splice::{SpliceConfig, SpliceOffload, SpliceTable};
use super::teardown::{self, TeardownOffload};
use super::{setup, OffloadChain};

/// Why the offloads of a configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum OffloadError {
    /// A Tonic plugin (`[tonic] plugins`) did not load or register.
    #[error("[tonic] plugins: {path}: {message}")]
    Plugin {
        /// The library's path as configured.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The teardown engine's settings (`[offloads]`) make no timer wheel.
    #[error("[offloads] teardown: {0}")]
    Teardown(String),
}

/// The Tonic modules loaded from shared libraries, loaded once per process and registered
/// on every lcore's registry.
#[derive(Clone, Default)]
pub struct LoadedPlugins {
    modules: Vec<(String, Arc<dyn TonicModule>)>,
}

impl LoadedPlugins {
    /// Loads every library of `[tonic] plugins` (the C ABI of `offload_api::tonic_abi`).
    pub fn load(cfg: &TonicConfig) -> Result<Self, OffloadError> {
        let mut modules = Vec::new();
        for p in &cfg.plugins {
            let m = plugin::load(Path::new(p)).map_err(|e: PluginError| OffloadError::Plugin {
                path: p.clone(),
                message: e.to_string(),
            })?;
            modules.push((p.clone(), m));
        }
        Ok(LoadedPlugins { modules })
    }

    /// The built-in modules plus the loaded ones.
    pub fn registry(&self) -> Result<Registry, OffloadError> {
        let mut reg = Registry::builtin();
        for (path, m) in &self.modules {
            let name = m.name().to_string();
            reg.register(
                &name,
                &format!("loaded from {path}"),
                plugin::factory(m.clone()),
            )
            .map_err(|e| OffloadError::Plugin {
                path: path.clone(),
                message: e.to_string(),
            })?;
        }
        Ok(reg)
    }
}

/// The Tonic side of a NIC lcore as `[tonic]` configures it: engine sizes and module
/// parameters from the configuration, the loaded plugins in its registry.
pub fn tonic_from_config(
    cfg: &TonicConfig,
    plugins: &LoadedPlugins,
) -> Result<TonicNic, OffloadError> {
    let (module, engine) = params_from_config(cfg);
    let mut nic = TonicNic::new(TonicNicConfig {
        engine,
        module,
        ..TonicNicConfig::default()
    });
    *nic.registry_mut() = plugins.registry()?;
    Ok(nic)
}

/// State the offloads of all NIC lcores of a process share, made once per process: the
/// splice table (AccelTCP §4.3; RSS may bring a spliced pair's segments to any lcore).
#[derive(Clone, Debug, Default)]
pub struct SharedOffloads {
    /// The splice table, when `[offloads] splice` is on.
    pub splice: Option<Arc<SpliceTable>>,
}

impl SharedOffloads {
    /// The shared state `[offloads]` asks for.
    pub fn new(offloads: &OffloadConfig) -> SharedOffloads {
        SharedOffloads {
            splice: offloads.splice.then(|| {
                SpliceTable::new(SpliceConfig {
                    max_pairs: offloads.splice_max_pairs,
                    idle_timeout_ns: offloads.splice_idle_timeout_ms.saturating_mul(1_000_000),
                    linger_ns: offloads.splice_linger_ms.saturating_mul(1_000_000),
                })
            }),
        }
    }
}

/// The offload chain of one NIC lcore for a configuration, in AccelTCP §4's order: the
/// splice offload over the process's shared table (AccelTCP §4.3; idle until the host
/// installs a pair), the teardown offload (AccelTCP §4.2; idle until the host hands a close
/// over), Tonic (idle until the host adds a flow), configured from `[tonic]`, then the
/// SYN-cookie responder (AccelTCP §4.1; idle until the host registers a setup-offloaded
/// listener). `[offloads]` turns the AccelTCP engines on or off and sets them up; `shared`
/// comes from [`SharedOffloads::new`] with the same `offloads`, once per process.
pub fn build_chain<B: PacketBuf>(
    cfg: &TonicConfig,
    offloads: &OffloadConfig,
    plugins: &LoadedPlugins,
    shared: &SharedOffloads,
) -> Result<OffloadChain<B>, OffloadError> {
    let mut chain = OffloadChain::new();
    if let Some(t) = &shared.splice {
        chain.push(Box::new(SpliceOffload::new(t.clone())));
    }
    if offloads.teardown {
        let td = TeardownOffload::new(teardown::TeardownConfig {
            max_flows: offloads.teardown_max_flows,
            time_wait_ns: offloads.teardown_time_wait_ms.saturating_mul(1_000_000),
            fin_wait2_ns: offloads.teardown_fin_wait2_ms.saturating_mul(1_000_000),
            max_retries: offloads.teardown_max_retries,
            ..teardown::TeardownConfig::default()
        })
        .map_err(|e| OffloadError::Teardown(e.to_string()))?;
        chain.push(Box::new(td));
    }
    chain.push(Box::new(tonic_from_config(cfg, plugins)?));
    if offloads.setup {
        chain.push(Box::new(setup::SetupOffload::new(
            offload_api::syncookie::CookieConfig {
                period_ns: offloads.cookie_period_s.saturating_mul(1_000_000_000),
                max_age: offloads.cookie_max_age,
                rotate_ticks: offloads.cookie_rotate_ticks,
            },
        )));
    }
    Ok(chain)
}

/// The chain every lcore gets without a configuration: splice (over a table of its own),
/// teardown, Tonic and the SYN-cookie responder with their defaults.
pub fn default_chain<B: PacketBuf>() -> OffloadChain<B> {
    OffloadChain::new()
        .with(Box::new(SpliceOffload::default()))
        .with(Box::new(TeardownOffload::default()))
        .with(Box::new(TonicNic::default()))
        .with(Box::new(setup::SetupOffload::default()))
}
