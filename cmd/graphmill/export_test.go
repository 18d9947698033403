package main

// APIAddr is the bound address of the public API ("" on a worker).
func (m *Main) APIAddr() string {
	if m.api == nil {
		return ""
	}
	return m.api.Addr()
}

// OpsAddr is the bound address of the ops endpoint.
func (m *Main) OpsAddr() string { return m.ops.Addr() }
