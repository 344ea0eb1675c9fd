-- An image whose header says more pixels than MAX_IMAGE_PIXELS is rejected before the scan.
ALTER TYPE "rejection_code" ADD VALUE 'image_too_large';
