# The image for Kubernetes (samples/deploy/cronjob.yaml) and other container schedulers:
#
#   docker build -t school-export .
#   docker run --rm -e SCHOOL_API_TOKEN school-export run --api-url https://<default domain> --dest s3://bucket/exports
#
# Stage 1 packs the tarball as a build machine does (`npm pack`: it builds dist/ afresh and ships
# the lockfile as npm-shrinkwrap.json). Stage 2 is the production install and nothing else: the
# same script the production-install test runs (bin/install-tarball.sh: unpack, npm ci --omit=dev),
# so the image holds only dist/ and the runtime dependencies (DuckDB's prebuilt binary among them),
# no TypeScript, no compiler, no sources. test/install/dockerfile.test.ts checks this file.

FROM node:24-slim AS pack
WORKDIR /src
COPY . .
RUN npm ci --no-audit --no-fund \
 && npm pack --pack-destination /tmp/pack \
 && mv /tmp/pack/school-export-*.tgz /tmp/school-export.tgz

FROM node:24-slim
ENV NODE_ENV=production
COPY --from=pack /tmp/school-export.tgz /tmp/school-export.tgz
COPY bin/install-tarball.sh /tmp/install-tarball.sh
RUN sh /tmp/install-tarball.sh /tmp/school-export.tgz /opt/school-export \
 && ln -s /opt/school-export/bin/school-export.js /usr/local/bin/school-export \
 && rm -rf /tmp/school-export.tgz /tmp/install-tarball.sh /root/.npm \
 && rm -rf /usr/local/lib/node_modules/npm /usr/local/lib/node_modules/corepack /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack
# the node image's unprivileged user (uid 1000); exports go to S3 or a mounted volume
USER node
WORKDIR /home/node
# V8's optimising compiler on the main thread instead of a background one: on Node 24 the background
# thread's freed compiler memory stayed in the process (11-17 MB more peak RSS, 100,000 wide rows,
# every format), for no CPU gained. Node accepts the flag only on its command line, hence node here.
ENTRYPOINT ["node", "--no-concurrent-recompilation", "/opt/school-export/bin/school-export.js"]
CMD ["--help"]
