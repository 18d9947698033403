package integration_test

func helperProcess() bool { return false }
