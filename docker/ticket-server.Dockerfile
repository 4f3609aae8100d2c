# One ticket server. BASE defaults to Debian 12; docker/build-images.sh passes a local base with
# the libraries the binary needs when no registry can be reached.
# Build from the repository root after `cargo build --release -p ticket-server`:
#   docker build -f docker/ticket-server.Dockerfile -t idgen/ticket-server .
# Run server k of N: docker run -v t1:/data idgen/ticket-server --offset 1 --increment 2
ARG BASE=debian:12-slim
FROM ${BASE}
COPY target/release/ticket-server /usr/local/bin/ticket-server
EXPOSE 7001
ENTRYPOINT ["/usr/local/bin/ticket-server", "serve", "--listen", "0.0.0.0:7001", "--data-dir", "/data"]
# --init: start on a blank /data (see README: drop it once the volume exists).
CMD ["--offset", "1", "--increment", "1", "--init"]
