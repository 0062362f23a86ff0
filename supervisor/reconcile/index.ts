/**
 * The reconcile: scores turned into states under capacity, hysteresis and pins, the moves scheduled and
 * run through the lifecycle, the context journalled, operations on one agent, and late moves reported.
 */
export { decideStates, type Decision, type DecisionReason, type ScoredAgent, stateForScore } from './decide-states.js';
export { FleetController, type FleetControllerOptions, type ProgressListener } from './fleet-controller.js';
export { fleetPins, fleetPorts } from './pins.js';
export { ReconcileJournal } from './reconcile-journal.js';
