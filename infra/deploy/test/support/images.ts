/** `repo/name:tag` -> tag, or undefined when untagged (which means `latest`). Digests count as pinned. */
export function imageTag(image: string): string | undefined {
  if (image.includes("@sha256:")) return image.slice(image.indexOf("@") + 1);
  const lastPart = image.slice(image.lastIndexOf("/") + 1);
  return lastPart.includes(":") ? lastPart.slice(lastPart.indexOf(":") + 1) : undefined;
}

/** `host:5000/repo/name:1.4.1@sha256:…` -> `1.4.1`: the tag alone, undefined when there is none. */
export function releaseTag(image: string): string | undefined {
  const withoutDigest = image.split("@")[0]!;
  const lastPart = withoutDigest.slice(withoutDigest.lastIndexOf("/") + 1);
  return lastPart.includes(":") ? lastPart.slice(lastPart.indexOf(":") + 1) : undefined;
}

export const imageName = (image: string): string => {
  const withoutDigest = image.split("@")[0]!;
  const slash = withoutDigest.lastIndexOf("/");
  const colon = withoutDigest.lastIndexOf(":");
  return colon > slash ? withoutDigest.slice(0, colon) : withoutDigest;
};

/** A third-party image must name an exact release: a tag with a version number, never `latest`. */
export function unpinnedImage(image: string): string | undefined {
  const tag = imageTag(image);
  if (tag === undefined) return `${image} has no tag (that is "latest")`;
  if (tag === "latest" || !/\d/.test(tag)) return `${image} is not pinned to a release`;
  return undefined;
}
