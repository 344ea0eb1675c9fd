# `docker buildx bake` builds every image; `docker buildx bake text` one of them. Each deployable has its
# own image and tag, so each can be released alone:
#   TAG=1.4.1 REVISION=$(git rev-parse HEAD) docker buildx bake --push text
# By default the tag is this checkout's release: package.json's `version`, CHANGELOG.md's first entry
# (infra/deploy/test/release-version.test.ts keeps them equal).
variable "REGISTRY" { default = "registry.example.com/meter" }
variable "TAG" { default = "1.1.0" }
variable "REVISION" { default = "unknown" }

group "default" {
  targets = ["gateway", "text", "media-jobs", "media-jobs-worker", "files", "files-worker", "billing-ledger", "mcp", "clamd"]
}

target "_meter" {
  context    = "."
  dockerfile = "Dockerfile"
  args       = { VERSION = TAG, REVISION = REVISION }
}

target "gateway" {
  inherits = ["_meter"]
  target   = "gateway"
  tags     = ["${REGISTRY}/gateway:${TAG}"]
}

target "text" {
  inherits = ["_meter"]
  target   = "text"
  tags     = ["${REGISTRY}/text:${TAG}"]
}

target "media-jobs" {
  inherits = ["_meter"]
  target   = "media-jobs"
  tags     = ["${REGISTRY}/media-jobs:${TAG}"]
}

target "media-jobs-worker" {
  inherits = ["_meter"]
  target   = "media-jobs-worker"
  tags     = ["${REGISTRY}/media-jobs-worker:${TAG}"]
}

target "files" {
  inherits = ["_meter"]
  target   = "files"
  tags     = ["${REGISTRY}/files:${TAG}"]
}

target "files-worker" {
  inherits = ["_meter"]
  target   = "files-worker"
  tags     = ["${REGISTRY}/files-worker:${TAG}"]
}

target "billing-ledger" {
  inherits = ["_meter"]
  target   = "billing-ledger"
  tags     = ["${REGISTRY}/billing-ledger:${TAG}"]
}

target "mcp" {
  inherits = ["_meter"]
  target   = "mcp"
  tags     = ["${REGISTRY}/mcp:${TAG}"]
}

target "clamd" {
  context = "infra/clamav"
  tags    = ["${REGISTRY}/clamd:${TAG}"]
}
