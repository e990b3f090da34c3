package events

// registerCommand adds the command aggregate's types.
func registerCommand(r *Registry) {}
