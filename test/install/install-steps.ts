/**
 * The production install's one list of steps: bin/install-tarball.sh. The production-install test
 * runs it (offline) and the Dockerfile runs it; dockerfile.test.ts checks the Dockerfile installs
 * through it and no other way.
 */
export const INSTALL_SCRIPT = 'bin/install-tarball.sh';
