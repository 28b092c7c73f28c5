"""The endpoints' handlers, by resource: each translates between the wire and the core
(`Gateway`, devices, people); the table that names them is http/endpoints.py."""
