package fencing

// CrashpointEnv names the step a crash test stops at: "STEP" (its first
// time) or "STEP@N" (its N-th). The build with -tags crashpoints is the
// real supervisor with these stops added; the test then kills or
// signals the stopped process at a known point of an act's path
// (integration/fencing_steps_test.go). The steps, in the order an act
// passes them:
//
//	before-attempt  the run suspended at an act; its attempt is signed, not recorded
//	before-claim    the attempt is durable; its claim is not
//	before-act      the claim is durable; the act is not called
//	before-outcome  the act returned; its outcome is not recorded
//	before-consume  the outcome is durable; the program has not taken it
const CrashpointEnv = "CYBER_SUPERVISOR_CRASHPOINT"
