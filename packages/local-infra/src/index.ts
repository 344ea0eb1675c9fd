/**
 * Local infrastructure for `npm start` and the tests: a clamd with the project's signatures
 * (infra/clamav) and an S3-compatible object store. Both reuse a server already answering on
 * their port and only ever stop what they started themselves.
 */
export {
  ensureClamd,
  pingClamd,
  stopClamd,
  installClamd,
  findClamd,
  clamdCommand,
  LocalClamdError,
  type ClamdHandle,
  type EnsureClamdOptions,
  type LocalClamdErrorCode,
} from "./clamd";
export { startObjectStore, probeObjectStore, LocalObjectStoreError, type ObjectStoreHandle, type StartObjectStoreOptions } from "./object-store";
export {
  ensureTesseract,
  installTesseract,
  probeTesseract,
  LocalTesseractError,
  TESSERACT_PACKAGES,
  TESSERACT_LANGUAGES,
  type EnsureTesseractOptions,
  type TesseractInfo,
  type LocalTesseractErrorCode,
} from "./tesseract";
export {
  ensureChromium,
  installChromium,
  probeChromium,
  LocalChromiumError,
  CHROMIUM_EXECUTABLE,
  CHROMIUM_HEADLESS_ARGS,
  type ChromiumInfo,
  type EnsureChromiumOptions,
} from "./chromium";
export { ensureKubectl, probeKubectl, LocalKubectlError, type KubectlInfo, type EnsureKubectlOptions } from "./kubectl";
export { runInForeground } from "./foreground";
export { assignPorts, withAssignedPorts, retryWhileAddressInUse, isAddressInUse, ephemeralPortRange } from "./port";
export { adminClient, type AdminCall } from "./admin-client";
export { repoRoot, localStateDir, clamavSignaturesDir, clamdConfigFile } from "./repo-paths";
export { ensurePrerequisites, tcpOpen } from "./prerequisites";
export { localSecrets, type LocalSecrets, type InternalKeySet } from "./secrets";
export { ensureBrokerUsers, deleteBrokerUsers, brokerUrlOf, vhostOf, type BrokerUsersOptions } from "./broker-users";
export {
  startSystem,
  availableServices,
  envPrefix,
  SERVICES,
  DEFAULT_PORTS,
  type ServiceName,
  type SystemOptions,
  type RunningSystem,
  type ProcessRelease,
} from "./system";
