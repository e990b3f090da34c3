package projections

// RowPhase exports rowPhase to the tests.
var RowPhase = rowPhase

// Guard exports guard to the tests.
var Guard = guard

// RowStatus exports rowStatus to the tests.
var RowStatus = rowStatus
