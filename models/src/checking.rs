//! Running the checker the way every model's tests do: a correct configuration explored
//! exhaustively (within its bounds) must break no `always` property and show an example of every
//! `sometimes` property; a broken one must yield a counterexample to the property it names.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::hash::Hash;

use stateright::{Checker, Expectation, HasDiscoveries, Model};

/// A model the checker can run on threads and report on: every model of this crate is one.
pub trait Checkable:
    Model<
        State: Hash + Send + Sync + Debug + Clone + PartialEq + 'static,
        Action: Debug + Clone + PartialEq + Send + Sync + 'static,
    > + Send
    + Sync
    + 'static
{
}

impl<M> Checkable for M where
    M: Model<
            State: Hash + Send + Sync + Debug + Clone + PartialEq + 'static,
            Action: Debug + Clone + PartialEq + Send + Sync + 'static,
        > + Send
        + Sync
        + 'static
{
}

/// What an exhaustive check of a model found.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Distinct states explored.
    pub states: usize,
    /// Whether the checker visited every reachable state.
    pub complete: bool,
    /// `always` and `eventually` properties with a counterexample, and its steps.
    pub counterexamples: Vec<(&'static str, Vec<String>)>,
    /// `sometimes` properties no reachable state shows: the bounds are too small to exercise
    /// what the property names, so the model proves less than it says.
    pub missing_examples: Vec<&'static str>,
}

impl Verdict {
    /// True when every property held and every example was found, over the whole space.
    pub fn holds(&self) -> bool {
        self.complete && self.counterexamples.is_empty() && self.missing_examples.is_empty()
    }
}

/// Explores every state of `model` (breadth first, on one thread) and reports on each property.
pub fn check<M>(model: M) -> Verdict
where
    M: Checkable,
{
    let properties = model.properties();
    let checker = model.checker().threads(1).spawn_bfs().join();
    let discoveries: HashMap<&'static str, _> = checker.discoveries();
    let mut verdict = Verdict {
        states: checker.unique_state_count(),
        // With every `sometimes` found and no counterexample, stopping early is impossible: the
        // checker stops before the end only once every property has a discovery.
        complete: checker.is_done(),
        counterexamples: Vec::new(),
        missing_examples: Vec::new(),
    };
    for p in &properties {
        let found = discoveries.get(p.name);
        match (p.expectation.clone(), found) {
            (Expectation::Sometimes, None) => verdict.missing_examples.push(p.name),
            (Expectation::Sometimes, Some(_)) => {}
            (_, Some(path)) => verdict
                .counterexamples
                .push((p.name, steps(checker.model(), path.clone()))),
            (_, None) => {}
        }
    }
    verdict
}

/// Searches `model` (breadth first, so the shortest) for a counterexample to `property`; the
/// steps leading to it, or `None` when the whole space has none.
pub fn counterexample<M>(model: M, property: &'static str) -> Option<Vec<String>>
where
    M: Checkable,
{
    assert!(
        model
            .properties()
            .iter()
            .any(|p| p.name == property && p.expectation.discovery_is_failure()),
        "the model states no always or eventually property named {property:?}"
    );
    let checker = model
        .checker()
        .threads(1)
        .finish_when(HasDiscoveries::AnyOf(BTreeSet::from([property])))
        .spawn_bfs()
        .join();
    let condition = checker
        .model()
        .properties()
        .into_iter()
        .find(|p| p.name == property)
        .expect("checked above")
        .condition;
    let path = checker.discovery(property)?;
    // The checker keeps the last violating state it met, and a violation stays in every state
    // after it: cut the path at the first state that breaks the property.
    let mut steps = Vec::new();
    for (state, action) in path.into_vec() {
        if !condition(checker.model(), &state) {
            break;
        }
        if let Some(a) = action {
            steps.push(checker.model().format_action(&a));
        }
    }
    Some(steps)
}

fn steps<M>(model: &M, path: stateright::Path<M::State, M::Action>) -> Vec<String>
where
    M: Model,
    M::Action: Debug,
{
    path.into_actions()
        .iter()
        .map(|a| model.format_action(a))
        .collect()
}

/// Panics unless `model` keeps every property over its whole bounded space.
pub fn assert_holds<M>(name: &str, model: M) -> Verdict
where
    M: Checkable,
{
    let verdict = check(model);
    assert!(
        verdict.holds(),
        "{name}: explored {} states (complete: {}); counterexamples: {:#?}; sometimes-properties \
         never reached: {:?}",
        verdict.states,
        verdict.complete,
        verdict.counterexamples,
        verdict.missing_examples
    );
    verdict
}

/// Panics unless `model` has a counterexample to `property`; returns its steps.
pub fn assert_counterexample<M>(name: &str, model: M, property: &'static str) -> Vec<String>
where
    M: Checkable,
{
    counterexample(model, property)
        .unwrap_or_else(|| panic!("{name}: the checker found no counterexample to {property:?}"))
}
