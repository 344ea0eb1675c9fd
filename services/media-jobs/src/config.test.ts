import { upstreamKeyEnvRefusal } from "@meter/contracts";
import { MediaJobsConfig } from "./config";

it("none of media-jobs' settings can be read as an upstream key, whatever UPSTREAM_KEY_ENV_PATTERN admits", () => {
  for (const name of Object.keys(MediaJobsConfig.shape)) expect([name, upstreamKeyEnvRefusal(name, /^.*$/)]).toEqual([name, expect.any(String)]);
});
