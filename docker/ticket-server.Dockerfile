# One ticket server. BASE defaults to Debian 12; docker/build-images.sh passes a local base with
# the libraries the binary needs when no registry can be reached.
# Build from the repository root after `cargo build --release -p ticket-server`:
#   docker build -f docker/ticket-server.Dockerfile -t idgen/ticket-server .
# Once, on a new volume: docker run --rm -v t1:/data --entrypoint /usr/local/bin/ticket-server \
#   idgen/ticket-server init --data-dir /data --offset 1 --increment 2
# Run server k of N: docker run -v t1:/data idgen/ticket-server --offset 1 --increment 2
ARG BASE=debian:12-slim
FROM ${BASE}
COPY target/release/ticket-server /usr/local/bin/ticket-server
EXPOSE 7001
ENTRYPOINT ["/usr/local/bin/ticket-server", "serve", "--listen", "0.0.0.0:7001", "--data-dir", "/data"]
# A blank /data is refused (it would hand out every ticket again): make the store once with
# `ticket-server init` (above), or pass --start-above N after a lost volume.
CMD ["--offset", "1", "--increment", "1"]
