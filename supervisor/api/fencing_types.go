package api

import "github.com/cyberia-to/cyber-supervisor/supervisor/fenceservice"

// The bodies and answers of the fencing routes are the fencing service's
// requests and replies (supervisor/fenceservice, types.go): the names
// here are kept for the API's callers.
type (
	NeuronInitBody  = fenceservice.NeuronInitBody
	NeuronReply     = fenceservice.NeuronReply
	PolicyBody      = fenceservice.PolicyBody
	GrantBody       = fenceservice.GrantBody
	PlacementBody   = fenceservice.PlacementBody
	ProgBody        = fenceservice.ProgBody
	ProgReply       = fenceservice.ProgReply
	UpgradeBody     = fenceservice.UpgradeBody
	InvokeBody      = fenceservice.InvokeBody
	ReconcileBody   = fenceservice.ReconcileBody
	ReconcileReply  = fenceservice.ReconcileReply
	ActInfo         = fenceservice.ActInfo
	InvocationReply = fenceservice.InvocationReply
	OperationReply  = fenceservice.OperationReply
)
