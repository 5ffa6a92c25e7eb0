package apitypes

// changesFixtures are the fixtures of changes.go's types.
func changesFixtures() map[string]any {
	return map[string]any{
		"JobChanges": JobChanges{Cursor: "b-7.42", Jobs: []string{"j1", "j2"}, Reset: true},
	}
}
