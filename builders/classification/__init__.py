"""The classification family (issue 23): label spaces stored once per config."""
