//! The settings as the shell block `llmgw mirror env` prints and the front
//! page shows: what a node pastes.
//!
//! Invariant: every value comes from [`NodeEnv`]; only comments are added.

use super::env::NodeEnv;

impl NodeEnv {
    /// The settings as one block a node's shell runs: the variables every
    /// node sets, then each environment's (exported when there is one,
    /// else commented: a node picks its own), then the other bases and
    /// files as comments.
    pub fn to_shell(&self) -> String {
        let mut out = format!("# llmgw mirror at {}\n", self.url);
        for v in &self.variables {
            out.push_str(&format!("export {}={}  # {}\n", v.name, v.value, v.read_by));
        }
        let one = self.python_envs.len() == 1;
        if !self.python_envs.is_empty() && !one {
            out.push_str("# Python environments: uncomment the one this node installs\n");
        }
        for e in &self.python_envs {
            let vars: Vec<String> = e
                .variables
                .iter()
                .map(|v| format!("{}={}", v.name, v.value))
                .collect();
            let lead = if one { "" } else { "# " };
            out.push_str(&format!(
                "# environment {}\n{lead}export {}\n",
                e.name,
                vars.join(" ")
            ));
            for line in &e.install {
                let how = if e.project.is_some() {
                    "in an empty folder"
                } else if e
                    .notes
                    .iter()
                    .any(|n| n.starts_with("made with --override"))
                {
                    "only from its lock"
                } else {
                    "or exactly its lock"
                };
                out.push_str(&format!("#   {how}: {line}\n"));
            }
            if !e.os_packages.is_empty() || e.glibc.is_some() {
                let mut needs = Vec::new();
                if let Some(g) = &e.glibc {
                    needs.push(format!("glibc {g} or newer"));
                }
                if !e.os_packages.is_empty() {
                    needs.push(format!("OS packages {}", e.os_packages.join(" ")));
                }
                out.push_str(&format!("#   nodes need: {}\n", needs.join("; ")));
            }
            if let Some(p) = &e.node_brings_python {
                out.push_str(&format!(
                    "#   no interpreter carried: the node brings its own CPython {p}\n"
                ));
            }
            for n in &e.notes {
                out.push_str(&format!("#   {n}\n"));
            }
        }
        if let Some(api) = &self.github_api {
            out.push_str(&format!("# GitHub-shaped release API: {api}\n"));
        }
        for r in &self.releases {
            out.push_str(&format!("# release {} {}: {}\n", r.repo, r.tag, r.download));
        }
        for h in &self.containerd {
            out.push_str(&format!("# containerd: {}\n", h.file));
            for line in h.content.lines() {
                out.push_str(&format!("#   {line}\n"));
            }
        }
        if let Some(helm) = &self.helm_repo {
            out.push_str(&format!("# Helm: helm repo add llmgw {helm}\n"));
        }
        super::extras_env::to_shell(&self.extras, &mut out);
        super::extras_env::left_out_to_shell(&self.extras_left_out, &mut out);
        out
    }
}
