//! The semantic robot description (SRDF): planning groups, named group states and
//! `disable_collisions` pairs.

use std::collections::BTreeMap;

use super::model::KinematicTree;
use super::RobotError;

/// One `<group>` of an SRDF, as written (resolution to joints happens in [`super::PlanningGroup`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SrdfGroup {
    /// Group name.
    pub name: String,
    /// `<joint name=...>` entries.
    pub joints: Vec<String>,
    /// `<link name=...>` entries.
    pub links: Vec<String>,
    /// `<chain base_link tip_link>` entries.
    pub chains: Vec<(String, String)>,
    /// `<group name=...>` subgroup entries.
    pub subgroups: Vec<String>,
}

/// A parsed SRDF.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Srdf {
    /// Groups in file order.
    pub groups: Vec<SrdfGroup>,
    /// Named states: `(group, state name) -> joint name -> value`.
    pub group_states: BTreeMap<(String, String), BTreeMap<String, f64>>,
    /// `disable_collisions` pairs (link names).
    pub disabled: Vec<(String, String)>,
    /// Entries that were ignored, with the reason.
    pub warnings: Vec<String>,
}

fn attr<'a>(
    node: &roxmltree::Node<'a, 'a>,
    name: &str,
    source: &str,
) -> Result<&'a str, RobotError> {
    node.attribute(name).ok_or_else(|| RobotError::Srdf {
        source_name: source.to_string(),
        message: format!(
            "<{}> near byte {} has no '{}' attribute",
            node.tag_name().name(),
            node.range().start,
            name
        ),
    })
}

impl Srdf {
    /// Parses SRDF text. Links named in `disable_collisions` must exist in `tree`.
    pub fn parse(text: &str, source: &str, tree: &KinematicTree) -> Result<Self, RobotError> {
        let doc = roxmltree::Document::parse(text).map_err(|e| RobotError::Srdf {
            source_name: source.to_string(),
            message: e.to_string(),
        })?;
        let root = doc.root_element();
        if root.tag_name().name() != "robot" {
            return Err(RobotError::Srdf {
                source_name: source.to_string(),
                message: "root element is not <robot>".into(),
            });
        }
        let mut out = Srdf::default();
        for node in root.children().filter(|n| n.is_element()) {
            match node.tag_name().name() {
                "group" => {
                    let mut g = SrdfGroup {
                        name: attr(&node, "name", source)?.to_string(),
                        ..Default::default()
                    };
                    for c in node.children().filter(|n| n.is_element()) {
                        match c.tag_name().name() {
                            "joint" => g.joints.push(attr(&c, "name", source)?.to_string()),
                            "link" => g.links.push(attr(&c, "name", source)?.to_string()),
                            "chain" => g.chains.push((
                                attr(&c, "base_link", source)?.to_string(),
                                attr(&c, "tip_link", source)?.to_string(),
                            )),
                            "group" => g.subgroups.push(attr(&c, "name", source)?.to_string()),
                            _ => {}
                        }
                    }
                    out.groups.push(g);
                }
                "group_state" => {
                    let key = (
                        attr(&node, "group", source)?.to_string(),
                        attr(&node, "name", source)?.to_string(),
                    );
                    let mut values = BTreeMap::new();
                    for c in node
                        .children()
                        .filter(|n| n.is_element() && n.tag_name().name() == "joint")
                    {
                        let name = attr(&c, "name", source)?;
                        let v: f64 = attr(&c, "value", source)?.trim().parse().map_err(|_| {
                            RobotError::Srdf {
                                source_name: source.to_string(),
                                message: format!(
                                    "group_state '{}': joint '{}' value is not a number",
                                    key.1, name
                                ),
                            }
                        })?;
                        values.insert(name.to_string(), v);
                    }
                    out.group_states.insert(key, values);
                }
                "disable_collisions" => {
                    let a = attr(&node, "link1", source)?;
                    let b = attr(&node, "link2", source)?;
                    // MoveIt ignores pairs naming links the URDF lacks (the MBM Fetch SRDF
                    // has some); do the same, but keep a note of it.
                    if let Some(l) = [a, b].into_iter().find(|l| tree.link(l).is_err()) {
                        out.warnings.push(format!("disable_collisions names link '{l}', which is not in the URDF; pair ignored"));
                        continue;
                    }
                    out.disabled.push((a.to_string(), b.to_string()));
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// The group called `name`.
    pub fn group(&self, name: &str) -> Option<&SrdfGroup> {
        self.groups.iter().find(|g| g.name == name)
    }
}
