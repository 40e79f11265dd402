<?php
use PHPUnit\Framework\TestCase;

/**
 * Integration tests that need WordPress's globals: Codebox loads WordPress in global scope before
 * PHPUnit starts, so do_shortcode(), $wpdb, hooks and the_content behave as on a real site.
 */
final class WordPressTest extends TestCase {
	public function test_do_shortcode_renders_the_registered_shortcode(): void {
		$this->assertSame( '<p class="codebox-greet">Hello, Zoe!</p>', do_shortcode( '[codebox_greet name="Zoe"]' ) );
	}

	public function test_wpdb_is_the_global_database(): void {
		global $wpdb;
		$this->assertInstanceOf( 'wpdb', $wpdb );
		$id = wp_insert_post( array( 'post_title' => 'Codebox PHPUnit', 'post_status' => 'publish', 'post_content' => '[codebox_greet name="Db"]' ) );
		$this->assertGreaterThan( 0, $id );
		$title = $wpdb->get_var( $wpdb->prepare( "SELECT post_title FROM {$wpdb->posts} WHERE ID = %d", $id ) );
		$this->assertSame( 'Codebox PHPUnit', $title );
		$this->assertStringContainsString( 'Hello, Db!', apply_filters( 'the_content', get_post( $id )->post_content ) );
	}

	public function test_filters_run_through_the_global_hook_table(): void {
		add_filter( 'codebox_demo_test', function ( $value ) {
			return $value . '!';
		} );
		$this->assertSame( 'ok!', apply_filters( 'codebox_demo_test', 'ok' ) );
	}
}
