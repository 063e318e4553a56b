//! The node's service manager as a pure state machine: a `systemctl` command line in, the
//! systemd journal lines, the effects on services (start, stop, reload, reboot), the output and
//! the exit code out. Both node backends run it, so `systemctl` means the same on each
//! (DESIGN.md, "The node, as steps see it").

use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnitState {
    pub enabled: bool,
    pub active: bool,
    /// Its main process exited while it was meant to run (systemd's "failed" state), until
    /// it is started again.
    pub failed: bool,
}

/// What the backend must do to its services after a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    Start(String),
    Stop(String),
    Reload(String),
    /// `systemctl kill`: send the signal (`KILL`, `TERM`, …) to the unit's processes.
    Kill(String, String),
    Reboot,
}

/// The result of one `systemctl` command.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    /// Messages systemd (PID 1) logs, in order.
    pub journal: Vec<String>,
    pub effects: Vec<Effect>,
    pub stdout: String,
    pub stderr: String,
    /// As systemctl exits: 0 ok, 1 bad usage, 3 inactive (is-active), 5 unit not found.
    pub exit_code: i32,
}

impl Outcome {
    fn fail(code: i32, stderr: String) -> Self {
        Outcome {
            exit_code: code,
            stderr,
            ..Default::default()
        }
    }
}

/// The units of one node and their states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceManager {
    units: BTreeMap<String, UnitState>,
}

/// `kubelet` → `kubelet.service`.
pub fn unit_name(name: &str) -> String {
    if name.contains('.') {
        name.to_string()
    } else {
        format!("{name}.service")
    }
}

impl ServiceManager {
    /// Units known to this node, all enabled and stopped (the backend starts them at boot).
    pub fn new(units: &[&str]) -> Self {
        ServiceManager {
            units: units
                .iter()
                .map(|u| {
                    (
                        unit_name(u),
                        UnitState {
                            enabled: true,
                            active: false,
                            failed: false,
                        },
                    )
                })
                .collect(),
        }
    }

    /// A unit whose file appeared on disk (an agent wrote `/etc/systemd/system/<name>`), known
    /// from now on as systemd knows it after a daemon-reload: disabled and stopped.
    pub fn discover(&mut self, unit: &str) {
        self.units.entry(unit_name(unit)).or_insert(UnitState {
            enabled: false,
            active: false,
            failed: false,
        });
    }

    /// The unit's main process exited on its own while the unit was active: with status 0
    /// the unit is deactivated, otherwise it is failed (`is-active` says "failed") until
    /// something starts it again, as systemd does for a simple service. The lines systemd
    /// logs, none if the unit was not active (it was being stopped).
    pub fn main_process_exited(&mut self, unit: &str, success: bool) -> Vec<String> {
        let Some(state) = self.units.get_mut(&unit_name(unit)) else {
            return Vec::new();
        };
        if !state.active {
            return Vec::new();
        }
        state.active = false;
        state.failed = !success;
        if success {
            vec![format!("{}: Deactivated successfully.", unit_name(unit))]
        } else {
            vec![format!("{}: Failed with result 'exit-code'.", unit_name(unit))]
        }
    }

    pub fn state(&self, unit: &str) -> Option<UnitState> {
        self.units.get(&unit_name(unit)).copied()
    }

    /// Active units, in name order.
    pub fn active(&self) -> Vec<String> {
        self.units
            .iter()
            .filter(|(_, s)| s.active)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// `systemctl list-units [--state=…] [--no-legend]`: the loaded units in one of `states`
    /// (active, inactive, running, dead; none given: the active ones), as systemd's table. No
    /// unit here ever fails, so `--state=failed` lists none.
    fn list_units(&self, states: &[String], legend: bool) -> Outcome {
        let rows: Vec<String> = self
            .units
            .iter()
            .map(|(name, s)| {
                let (active, sub) = if s.active {
                    ("active", "running")
                } else {
                    ("inactive", "dead")
                };
                (name, active, sub)
            })
            .filter(|(_, active, sub)| {
                if states.is_empty() {
                    *active == "active"
                } else {
                    states.iter().any(|s| s == active || s == sub)
                }
            })
            .map(|(name, active, sub)| format!("{name} loaded {active} {sub} {name}\n"))
            .collect();
        let mut stdout = String::new();
        if legend && !rows.is_empty() {
            stdout.push_str("UNIT LOAD ACTIVE SUB DESCRIPTION\n");
        }
        stdout.push_str(&rows.concat());
        if legend {
            stdout.push_str(&format!("\n{} loaded units listed.\n", rows.len()));
        }
        Outcome {
            stdout,
            ..Default::default()
        }
    }

    /// Every unit file and whether it is enabled, in name order (systemd's `ListUnitFiles`).
    pub fn unit_files(&self) -> Vec<(String, bool)> {
        self.units.iter().map(|(n, s)| (n.clone(), s.enabled)).collect()
    }

    /// Enabled units, for boot.
    pub fn enabled(&self) -> Vec<String> {
        self.units
            .iter()
            .filter(|(_, s)| s.enabled)
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Run one command line (the words after `systemctl`; options starting with `-` ignored).
    pub fn systemctl(&mut self, args: &[&str]) -> Outcome {
        let line = CommandLine::parse(args);
        let Some((&verb, names)) = line.words.split_first() else {
            return Outcome::fail(1, "systemctl: a command is required\n".into());
        };
        if verb == "list-units" {
            return self.list_units(&line.states, line.legend);
        }
        let units: Vec<String> = names.iter().map(|n| unit_name(n)).collect();
        if let Some(missing) = units.iter().find(|u| !self.units.contains_key(*u)) {
            return no_such_unit(verb, missing);
        }
        let mut out = Outcome::default();
        match verb {
            "daemon-reload" => out.journal.push("Reloading.".into()),
            "enable" | "disable" | "preset" => self.set_enabled(verb, &units, &mut out),
            "start" => units.iter().for_each(|u| self.start(u, &mut out)),
            "stop" => units.iter().for_each(|u| self.stop(u, &mut out)),
            "restart" => units.iter().for_each(|u| {
                self.stop(u, &mut out);
                self.start(u, &mut out);
            }),
            "reload" => return self.reload(&units, out),
            "is-active" => self.is_active(&units, &mut out),
            "is-enabled" => return self.is_enabled(&units, out),
            "kill" => return self.kill(&units, &line.signal, out),
            "reboot" => out.effects.push(Effect::Reboot),
            other => return Outcome::fail(1, format!("Unknown command verb '{other}'.\n")),
        }
        out
    }

    /// `enable`, `disable` or `preset` (which enables, as the node's presets do).
    fn set_enabled(&mut self, verb: &str, units: &[String], out: &mut Outcome) {
        for u in units {
            let enable = verb != "disable";
            self.units.get_mut(u).expect("checked").enabled = enable;
            if verb == "enable" {
                out.stderr.push_str(&format!("Created symlink /etc/systemd/system/multi-user.target.wants/{u} → /etc/systemd/system/{u}.\n"));
            }
        }
        out.journal.push("Reloading.".into());
    }

    /// `reload`: every unit must be active, each logs its reload.
    fn reload(&self, units: &[String], mut out: Outcome) -> Outcome {
        for u in units {
            if !self.units[u].active {
                return Outcome::fail(1, format!("Failed to reload {u}: Unit {u} is not active.\n"));
            }
            out.journal.push(format!("Reloading {u}..."));
            out.journal.push(format!("Reloaded {u}."));
            out.effects.push(Effect::Reload(u.clone()));
        }
        out
    }

    /// `is-active`: a line per unit, exit 3 unless all are active.
    fn is_active(&self, units: &[String], out: &mut Outcome) {
        let active = units.iter().all(|u| self.units[u].active);
        for u in units {
            out.stdout.push_str(match self.units[u] {
                UnitState { active: true, .. } => "active\n",
                UnitState { failed: true, .. } => "failed\n",
                _ => "inactive\n",
            });
        }
        out.exit_code = if active { 0 } else { 3 };
    }

    /// `is-enabled`: a line per unit, exit 1 unless all are enabled.
    fn is_enabled(&self, units: &[String], mut out: Outcome) -> Outcome {
        if units.is_empty() {
            return Outcome::fail(1, "Too few arguments.\n".into());
        }
        for u in units {
            out.stdout.push_str(if self.units[u].enabled {
                "enabled\n"
            } else {
                "disabled\n"
            });
        }
        out.exit_code = if units.iter().all(|u| self.units[u].enabled) {
            0
        } else {
            1
        };
        out
    }

    /// `kill`: the signal to every active unit's processes.
    fn kill(&self, units: &[String], signal: &str, mut out: Outcome) -> Outcome {
        if units.is_empty() {
            return Outcome::fail(1, "Too few arguments.\n".into());
        }
        for u in units {
            if self.units[u].active {
                out.effects.push(Effect::Kill(u.clone(), signal.to_string()));
            }
        }
        out
    }

    fn start(&mut self, unit: &str, out: &mut Outcome) {
        let state = self.units.get_mut(unit).expect("checked");
        if state.active {
            return;
        }
        state.active = true;
        state.failed = false;
        out.journal.push(format!("Starting {unit}..."));
        out.journal.push(format!("Started {unit}."));
        out.effects.push(Effect::Start(unit.to_string()));
    }

    fn stop(&mut self, unit: &str, out: &mut Outcome) {
        let state = self.units.get_mut(unit).expect("checked");
        if !state.active {
            return;
        }
        state.active = false;
        out.journal.push(format!("Stopping {unit}..."));
        out.journal.push(format!("Stopped {unit}."));
        out.effects.push(Effect::Stop(unit.to_string()));
    }

    /// After a reboot: every unit stopped, then the enabled ones started.
    pub fn boot(&mut self) -> Outcome {
        let mut out = Outcome::default();
        for state in self.units.values_mut() {
            state.active = false;
        }
        for unit in self.enabled() {
            self.start(&unit, &mut out);
        }
        out
    }
}

/// A `systemctl` command line as the node's systemctl reads it.
struct CommandLine<'a> {
    /// `kill`'s signal without "SIG": `-s KILL`, `--signal KILL`, `--signal=SIGKILL`; TERM if none.
    signal: String,
    /// `list-units`' filter: `--state=failed` or `--state failed`, comma lists too.
    states: Vec<String>,
    /// No `--no-legend`.
    legend: bool,
    /// The verb and the unit names (every other option ignored).
    words: Vec<&'a str>,
}

impl<'a> CommandLine<'a> {
    fn parse(args: &[&'a str]) -> Self {
        let mut signal = "TERM".to_string();
        let (mut states, mut legend) = (Vec::new(), true);
        let mut words = Vec::new();
        let mut it = args.iter().copied();
        while let Some(arg) = it.next() {
            if arg == "-s" || arg == "--signal" {
                signal = it.next().unwrap_or_default().to_string();
            } else if let Some(value) = arg.strip_prefix("--signal=") {
                signal = value.to_string();
            } else if arg == "--state" {
                states.extend(it.next().unwrap_or_default().split(',').map(str::to_string));
            } else if let Some(value) = arg.strip_prefix("--state=") {
                states.extend(value.split(',').map(str::to_string));
            } else if arg == "--no-legend" {
                legend = false;
            } else if !arg.starts_with('-') {
                words.push(arg);
            }
        }
        let signal = signal.trim_start_matches("SIG").to_ascii_uppercase();
        CommandLine {
            signal,
            states,
            legend,
            words,
        }
    }
}

/// What systemctl answers when a named unit does not exist, by verb.
fn no_such_unit(verb: &str, missing: &str) -> Outcome {
    let what = match verb {
        "is-enabled" => {
            return Outcome::fail(
                1,
                format!("Failed to get unit file state for {missing}: No such file or directory\n"),
            );
        }
        "start" | "restart" | "reload" => {
            format!("Failed to {verb} {missing}: Unit {missing} not found.\n")
        }
        "is-active" => {
            return Outcome {
                stdout: "inactive\n".into(),
                exit_code: 3,
                ..Default::default()
            };
        }
        _ => format!("Failed to {verb} unit: Unit file {missing} does not exist.\n"),
    };
    Outcome::fail(5, what)
}

#[cfg(test)]
mod tests;
