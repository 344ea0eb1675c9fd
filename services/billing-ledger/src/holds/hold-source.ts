import type { Deployable, HoldSource } from "@meter/contracts";

/**
 * Whose holds a signed caller (an internal call's or a bus message's signer) places and resolves: its
 * service's (holds.source). media-jobs' worker acts for media-jobs; a deployable not named places none.
 */
export const HOLD_SOURCE_OF: Partial<Record<Deployable, HoldSource>> = { text: "text", "media-jobs": "media-jobs", "media-jobs-worker": "media-jobs" };

/** The deployables that place and resolve holds. */
export const HOLDERS = Object.keys(HOLD_SOURCE_OF) as Deployable[];
