//! A checker made of several checkers over the same joint space: an item is free only when
//! every part finds it free.
//!
//! The planning service uses it for allowed collisions between links and obstacles: one part
//! checks the whole robot against the obstacles no link may touch, and one part per set of
//! allowed links checks the robot without those links against the obstacles they may touch
//! ([`crate::robot::RobotModel::obstacle_checks_except`]). Every part is an ordinary checker
//! of the chosen backend, so each stays conservative, and so does their conjunction.

use super::{Backend, Checker, CollisionError, ConfigBatch, MotionBatch};
use crate::planners::device::DevicePlanner;
use crate::robot::JointSpace;

/// The conjunction of checkers (see the module documentation). Later parts see only the
/// items the earlier parts found free.
pub struct AllOf {
    parts: Vec<Box<dyn Checker>>,
}

impl std::fmt::Debug for AllOf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AllOf")
            .field("parts", &self.parts.len())
            .finish()
    }
}

impl AllOf {
    /// Joins `parts`, which must be at least one and share one joint space (same joint names
    /// in the same order).
    pub fn new(parts: Vec<Box<dyn Checker>>) -> Result<Self, CollisionError> {
        let bad = |message: String| CollisionError::Backend {
            backend: "all-of".into(),
            message,
        };
        let first = parts
            .first()
            .ok_or_else(|| bad("a conjunction needs at least one checker".into()))?;
        let names = &first.space().names;
        if let Some(k) = parts.iter().position(|p| &p.space().names != names) {
            return Err(bad(format!(
                "checker {k} has joints {:?}, the first has {:?}",
                parts[k].space().names,
                names
            )));
        }
        Ok(Self { parts })
    }

    /// The number of joined checkers.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Always false: a conjunction has at least one part.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }
}

/// Runs `check` on the first part for every item, then on each further part for the items
/// still free (`pick` builds the batch of those items), and returns the joined verdicts.
fn joined<B>(
    parts: &[Box<dyn Checker>],
    all: &B,
    len: usize,
    pick: impl Fn(&[usize]) -> Result<B, CollisionError>,
    check: impl Fn(&dyn Checker, &B) -> Result<Vec<bool>, CollisionError>,
) -> Result<Vec<bool>, CollisionError> {
    let Some((first, rest)) = parts.split_first() else {
        return Ok(vec![false; len]);
    };
    let mut verdicts = check(first.as_ref(), all)?;
    for part in rest {
        let free: Vec<usize> = (0..len).filter(|&i| verdicts[i]).collect();
        if free.is_empty() {
            break;
        }
        let answers = check(part.as_ref(), &pick(&free)?)?;
        if answers.len() != free.len() {
            return Err(CollisionError::Backend {
                backend: part.backend().name().into(),
                message: format!(
                    "{} verdicts for {} items in a conjunction",
                    answers.len(),
                    free.len()
                ),
            });
        }
        for (&i, ok) in free.iter().zip(answers) {
            verdicts[i] = ok;
        }
    }
    Ok(verdicts)
}

impl Checker for AllOf {
    fn space(&self) -> &JointSpace {
        self.parts[0].space()
    }

    fn check_configs(&self, configs: &ConfigBatch) -> Result<Vec<bool>, CollisionError> {
        let dof = configs.dof();
        joined(
            &self.parts,
            configs,
            configs.len(),
            |items| {
                let mut b = ConfigBatch::with_capacity(dof, items.len());
                for &i in items {
                    b.push(configs.row(i))?;
                }
                Ok(b)
            },
            |c, b| c.check_configs(b),
        )
    }

    fn check_motions_refined(
        &self,
        motions: &MotionBatch,
        resolution: f64,
        max_refinements: u32,
    ) -> Result<Vec<bool>, CollisionError> {
        joined(
            &self.parts,
            motions,
            motions.len(),
            |items| {
                let mut b = MotionBatch::new(motions.from.dof());
                for &i in items {
                    b.push(motions.from.row(i), motions.to.row(i))?;
                }
                Ok(b)
            },
            |c, b| c.check_motions_refined(b, resolution, max_refinements),
        )
    }

    fn backend(&self) -> Backend {
        self.parts[0].backend()
    }

    fn configs_evaluated(&self) -> Option<u64> {
        self.parts
            .iter()
            .map(|p| p.configs_evaluated())
            .sum::<Option<u64>>()
    }

    /// None: a planner resident on one part's device would check only that part's world.
    fn device_planner(&self) -> Option<&dyn DevicePlanner> {
        None
    }

    fn contacts(&self, q: &[f64]) -> Option<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.parts {
            for c in p.contacts(q)? {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::demo::bundled;
    use crate::collision::{CheckerOptions, CpuChecker};
    use crate::scene::{Obstacle, Scene, Shape};
    use nalgebra::{Isometry3, Vector3};
    use rand::{Rng, SeedableRng};

    #[test]
    fn verdicts_are_the_conjunction_and_later_parts_see_only_free_items() {
        let (robot, scene) = bundled().expect("bundled");
        let group = robot.default_group();
        let base = robot.tree.neutral_state();
        let cpu = |s: &Scene| {
            let opts = CheckerOptions {
                threads: 1,
                ..CheckerOptions::default()
            };
            CpuChecker::new(&robot, &group, &base, s, opts).expect("checker")
        };
        // A second world: only a large block beside the arm.
        let mut block = Scene::new(scene.frame());
        block
            .add(Obstacle {
                id: "block".into(),
                shape: Shape::Box {
                    half_extents: Vector3::new(0.3, 0.3, 0.3),
                },
                pose: Isometry3::translation(0.0, 0.6, 0.5),
            })
            .expect("block");
        let (a, b) = (cpu(&scene), cpu(&block));
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let dof = group.space.dof();
        let mut batch = ConfigBatch::new(dof);
        for _ in 0..3000 {
            let q: Vec<f64> = (0..dof)
                .map(|k| rng.random_range(group.space.lower[k]..group.space.upper[k]))
                .collect();
            batch.push(&q).expect("push");
        }
        let (va, vb) = (
            a.check_configs(&batch).expect("a"),
            b.check_configs(&batch).expect("b"),
        );
        let both = AllOf::new(vec![Box::new(cpu(&scene)), Box::new(cpu(&block))]).expect("all");
        assert_eq!(both.len(), 2);
        let v = both.check_configs(&batch).expect("both");
        let want: Vec<bool> = va.iter().zip(&vb).map(|(x, y)| *x && *y).collect();
        assert_eq!(v, want);
        // Each world rules out configurations the other allows.
        assert!(va.iter().zip(&vb).any(|(x, y)| *x && !*y));
        assert!(va.iter().zip(&vb).any(|(x, y)| !*x && *y));
        // The second part saw only what the first found free.
        let free_a = va.iter().filter(|&&x| x).count() as u64;
        assert_eq!(both.configs_evaluated(), Some(batch.len() as u64 + free_a));
        // Motions too.
        let mut motions = MotionBatch::new(dof);
        for k in 0..500 {
            motions
                .push(batch.row(2 * k), batch.row(2 * k + 1))
                .expect("motion");
        }
        let (ma, mb) = (
            a.check_motions(&motions, 0.05).expect("a"),
            b.check_motions(&motions, 0.05).expect("b"),
        );
        let m = both.check_motions(&motions, 0.05).expect("both");
        let want: Vec<bool> = ma.iter().zip(&mb).map(|(x, y)| *x && *y).collect();
        assert_eq!(m, want);
        // Contacts are the union.
        let on_block = |i: usize| {
            b.contacts(batch.row(i))
                .is_some_and(|c| c.iter().any(|l| l.contains("'block'")))
        };
        let q = (0..batch.len())
            .find(|&i| !va[i] && on_block(i))
            .expect("in both");
        let c = both.contacts(batch.row(q)).expect("contacts");
        assert!(c.iter().any(|l| l.contains("'block'")), "{c:?}");
        assert!(c.iter().any(|l| !l.contains("'block'")), "{c:?}");
    }

    #[test]
    fn a_conjunction_needs_a_checker() {
        let e = AllOf::new(Vec::new()).expect_err("empty");
        assert!(e.to_string().contains("at least one"), "{e}");
    }
}
